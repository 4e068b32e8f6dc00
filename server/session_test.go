package server_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// An S2S append session over h2c (what the Node SDK uses by default) must survive an idle
// period longer than the write timeout: a producer may append, pause, and append again on the
// same session. On HTTP/2 a write deadline is a timer that resets the stream with
// RST_STREAM(INTERNAL_ERROR) when it fires, even with no write pending, so the server clears
// each frame's deadline once the frame is written (armWrite). When it did not, the SDK saw a
// non-retryable S2Error (status 0, "Stream closed with error code NGHTTP2_INTERNAL_ERROR").
func TestAppendSessionSurvivesIdleLongerThanWriteTimeout(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	env := memStream(t, 0, server.WithWriteTimeout(writeTimeout))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/streams/s/records", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", servertest.TestBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	req.Header.Set("Accept", "application/protobuf")
	res, err := env.H2C.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.ProtoMajor != 2 || res.StatusCode != 200 {
		t.Fatalf("response %s %d", res.Proto, res.StatusCode)
	}
	fr := s2api.NewFrameReader(res.Body, 0)
	appendOne := func(body string, wantStart uint64) {
		t.Helper()
		in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(body)}}}
		f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &in)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(f); err != nil {
			_, rerr := fr.Next()
			t.Fatalf("write input %q: %v (the response body says: %v)", body, err, rerr)
		}
		ack, err := fr.Next()
		if err != nil || ack.Terminal {
			t.Fatalf("ack for %q: frame %+v, err %v", body, ack, err)
		}
		a, err := s2api.DecodeAppendAckProto(ack.Body)
		if err != nil || a.Start.SeqNum != wantStart {
			t.Fatalf("ack for %q: %+v %v", body, a, err)
		}
	}
	appendOne("first", 0)
	time.Sleep(4 * writeTimeout) // the client is idle; nothing is pending on the server
	appendOne("second", 1)
}

// stuckAppends is a backend whose append sessions take every input and never acknowledge
// one until the session ends: it counts the inputs handed over.
type stuckAppends struct {
	server.Backend
	mu       sync.Mutex
	handed   int
	received chan struct{} // a token per input handed over
}

func (b *stuckAppends) OpenAppends() server.Appends { return stuckSession{b} }

type stuckSession struct{ b *stuckAppends }

func (s stuckSession) Append(ctx context.Context, basin, stream string, in batchfmt.AppendInput) (func(context.Context) (s2api.AppendAck, error), error) {
	b := s.b
	b.mu.Lock()
	b.handed++
	b.mu.Unlock()
	b.received <- struct{}{}
	return func(wctx context.Context) (s2api.AppendAck, error) {
		<-wctx.Done()
		return s2api.AppendAck{}, wctx.Err()
	}, nil
}

// TestAppendSessionInFlightBound: an append session hands at most 256 inputs to the backend
// before their acks are written, however many the client sends (not 258, as when the reader
// handed an input over before it had room to queue its wait).
func TestAppendSessionInFlightBound(t *testing.T) {
	const bound = 256
	b := &stuckAppends{Backend: newEngineBackend(t), received: make(chan struct{}, 4*bound)}
	env := servertest.Start(t, func(testing.TB) server.Backend { return b })
	env.CreateStream(t, "s")
	sess := env.OpenAppendSession(t, "s")
	go func() {
		for range 3 * bound {
			if !sess.Send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}}) {
				return
			}
		}
	}()
	for range bound {
		<-b.received
	}
	// The session now holds the bound; give it every chance to take one more. (A wait for
	// an event that must not happen: the test passes after it, and fails early if it comes.)
	select {
	case <-b.received:
		b.mu.Lock()
		n := b.handed
		b.mu.Unlock()
		t.Fatalf("the session handed over %d inputs without an ack, want at most %d", n, bound)
	case <-time.After(300 * time.Millisecond):
	}
}

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
