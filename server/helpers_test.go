package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"

	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/memtest"
)

const testBasin = "test-basin"

type testEnv struct {
	srv     *server.Server
	backend *memtest.Backend
	url     string // http://127.0.0.1:port
	h1      *http.Client
	h2c     *http.Client
}

// startServer serves a memtest backend on 127.0.0.1 (HTTP/1.1 and h2c on one port) and
// creates the basin testBasin.
func startServer(t testing.TB, opts ...server.Option) *testEnv {
	t.Helper()
	b := memtest.New(nil)
	srv, err := server.New(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	env := &testEnv{
		srv:     srv,
		backend: b,
		url:     "http://" + ln.Addr().String(),
		h1:      &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}},
		h2c:     &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Protocols: &p}},
	}
	t.Cleanup(func() {
		_ = srv.Close()
		_ = hs.Close()
		<-done
		env.h1.CloseIdleConnections()
		env.h2c.CloseIdleConnections()
	})
	if _, err := b.CreateBasin(t.Context(), testBasin, defaultBasinConfig()); err != nil {
		t.Fatal(err)
	}
	return env
}

func withToken(tok string) server.Option { return server.WithBearerToken(tok) }

type resp struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request over HTTP/1.1 with the S2-Basin header set to testBasin unless hdr
// names another; a "-" value removes the header.
func (e *testEnv) do(t *testing.T, method, path string, hdr map[string]string, body []byte) resp {
	t.Helper()
	return e.doWith(t, e.h1, method, path, hdr, body)
}

func (e *testEnv) doWith(t *testing.T, c *http.Client, method, path string, hdr map[string]string, body []byte) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", testBasin)
	for k, v := range hdr {
		if v == "-" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// expect fails unless r has the status and (when body != "") exactly the JSON body.
func expect(t *testing.T, what string, r resp, status int, body string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, r.status, status, r.body)
	}
	if body != "" && !jsonEqual(r.body, []byte(body)) {
		t.Fatalf("%s: body\n got %s\nwant %s", what, r.body, body)
	}
	if body != "" {
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q, want application/json", what, ct)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
}

// appendN appends n records "r0".."r<n-1>" (bodies) to stream through the backend.
func (e *testEnv) appendN(t *testing.T, stream string, n int) {
	t.Helper()
	in := batchfmt.AppendInput{}
	for i := 0; i < n; i++ {
		in.Records = append(in.Records, batchfmt.Record{Body: []byte(fmt.Sprintf("r%d", i))})
	}
	if _, err := e.backend.Append(t.Context(), testBasin, stream, in); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) createStream(t testing.TB, name string) {
	t.Helper()
	if _, err := e.backend.CreateStream(t.Context(), testBasin, name, s2api.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) appendNIn(t *testing.T, basin, stream string, n int) {
	t.Helper()
	in := batchfmt.AppendInput{}
	for i := 0; i < n; i++ {
		in.Records = append(in.Records, batchfmt.Record{Body: []byte(fmt.Sprintf("r%d", i)), Timestamp: 1709481600000, HasTimestamp: true})
	}
	if _, err := e.backend.Append(t.Context(), basin, stream, in); err != nil {
		t.Fatal(err)
	}
}
