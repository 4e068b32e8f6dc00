package server_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// An idle S2S append session over HTTP/1.1 (full duplex) must not keep Server.Close from
// returning: Close cancels the session's context, and the session wakes its pending body read
// with a read deadline in the past. It once closed the body instead, and on HTTP/1.1
// (*http.body).Close takes the body's mutex, which the pending Read holds until the client
// sends more bytes: Close waited forever (as did `sluice serve` on SIGTERM).
func TestCloseEndsIdleHTTP1AppendSession(t *testing.T) {
	reg := prometheus.NewRegistry()
	env := memStream(t, 0, server.WithRegisterer(reg))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	// Runs before the env's cleanup (LIFO): ending the body lets a stuck Close return.
	t.Cleanup(func() { pw.Close() })
	req, err := http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/streams/s/records", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", servertest.TestBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	res, err := env.H1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.ProtoMajor != 1 || res.StatusCode != 200 {
		t.Fatalf("response %s %d", res.Proto, res.StatusCode)
	}
	in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("a")}}}
	f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &in)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write(f); err != nil {
		t.Fatal(err)
	}
	if ack, err := s2api.NewFrameReader(res.Body, 0).Next(); err != nil || ack.Terminal {
		t.Fatalf("ack: %+v %v", ack, err)
	}
	// The session is now idle, blocked reading the next input.
	done := make(chan struct{})
	go func() { _ = env.Server.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		t.Fatalf("Server.Close did not return within 5s with an idle HTTP/1.1 append session open (open s2s_append sessions: %v; a goroutine blocked in (*http.body).Close: %v)",
			servertest.OpenSessions(t, reg, "s2s_append"), strings.Contains(stacks, "net/http.(*body).Close"))
	}
	if v := servertest.OpenSessions(t, reg, "s2s_append"); v != 0 {
		t.Fatalf("open s2s_append sessions after Close: %v", v)
	}
}

// The same over h2c, where closing the body did wake the read.
func TestCloseEndsIdleH2CAppendSession(t *testing.T) {
	reg := prometheus.NewRegistry()
	env := memStream(t, 0, server.WithRegisterer(reg))
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	req, _ := http.NewRequestWithContext(t.Context(), "POST", env.URL+"/v1/streams/s/records", pr)
	req.Header.Set("S2-Basin", servertest.TestBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	res, err := env.H2C.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	done := make(chan struct{})
	go func() { _ = env.Server.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Server.Close did not return within 5s with an idle h2c append session open")
	}
	if v := servertest.OpenSessions(t, reg, "s2s_append"); v != 0 {
		t.Fatalf("open s2s_append sessions after Close: %v", v)
	}
}
