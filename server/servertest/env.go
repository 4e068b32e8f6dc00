// Package servertest is the conformance suite of the S2 API server: HTTP-level tests of every
// route, error mapping, SSE and S2S sessions (over real HTTP/1.1 and h2c connections), the
// curl examples of S2's documentation and S2's TypeScript SDK, run against any server.Backend.
//
// The engine runs it (on a memory store, and on S3):
//
//	func TestAPI(t *testing.T) {
//		servertest.Run(t, func(t testing.TB) server.Backend { return newEngineBackend(t) })
//	}
//
// Each test gets a fresh backend from the factory and creates the basins it needs through it.
package servertest

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
)

// Factory returns a fresh, empty backend for one test (and cleans it up with t.Cleanup).
type Factory func(t testing.TB) server.Backend

// Run runs the whole suite against backends from f.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"Auth", testAuth},
		{"BasinRoutes", testBasinRoutes},
		{"StreamRoutes", testStreamRoutes},
		{"AppendAndErrors", testAppendAndErrors},
		{"AutoCreate", testAutoCreate},
		{"RequestToken", testRequestToken},
		{"UnaryRead", testUnaryRead},
		{"TrimAndTimestamping", testTrimAndTimestamping},
		{"SSEFollow", testSSEFollow},
		{"SSEBoundedSessionsEnd", testSSEBoundedSessionsEnd},
		{"S2SReadSessionOverH2C", testS2SReadSessionOverH2C},
		{"S2SAppendSessionOverH2C", testS2SAppendSessionOverH2C},
		{"S2SAppendSessionOverHTTP1", testS2SAppendSessionOverHTTP1},
		{"CloseEndsSessions", testCloseEndsSessions},
		{"StuckClientIsDisconnected", testStuckClientIsDisconnected},
		{"StuckClientBesideIdleClient", testStuckClientBesideIdleClient},
		{"IdleSessionsOutliveWriteTimeout", testIdleSessionsOutliveWriteTimeout},
		{"TimestampStartPastTheTail", testTimestampStartPastTheTail},
		{"DocCurlExamples", testDocCurlExamples},
		{"SDKCompat", testSDKCompat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

const testBasin = "test-basin"

// Env is one running server: Server over Backend, listening on URL (HTTP/1.1 and h2c on one
// port), with clients for both protocols.
type Env struct {
	Server  *server.Server
	Backend server.Backend
	URL     string // http://127.0.0.1:port
	H1      *http.Client
	H2C     *http.Client // cleartext HTTP/2 with prior knowledge
}

// Start serves a backend from f on 127.0.0.1 and creates the basin "test-basin" in it. The
// server, listener and clients are closed by t.Cleanup.
func Start(t testing.TB, f Factory, opts ...server.Option) *Env {
	return startServer(t, f, opts...)
}

// TestBasin is the basin Start creates.
const TestBasin = testBasin

func startServer(t testing.TB, f Factory, opts ...server.Option) *Env {
	t.Helper()
	b := f(t)
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
	env := &Env{
		Server:  srv,
		Backend: b,
		URL:     "http://" + ln.Addr().String(),
		H1:      &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}},
		H2C:     &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Protocols: &p}},
	}
	t.Cleanup(func() {
		_ = srv.Close()
		_ = hs.Close()
		<-done
		env.H1.CloseIdleConnections()
		env.H2C.CloseIdleConnections()
	})
	if _, err := b.CreateBasin(t.Context(), testBasin, s2api.BasinConfig{}); err != nil {
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
func (e *Env) do(t *testing.T, method, path string, hdr map[string]string, body []byte) resp {
	t.Helper()
	return e.doWith(t, e.H1, method, path, hdr, body)
}

func (e *Env) doWith(t *testing.T, c *http.Client, method, path string, hdr map[string]string, body []byte) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.URL+path, rd)
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
func (e *Env) appendN(t *testing.T, stream string, n int) {
	t.Helper()
	in := batchfmt.AppendInput{}
	for i := 0; i < n; i++ {
		in.Records = append(in.Records, batchfmt.Record{Body: []byte(fmt.Sprintf("r%d", i))})
	}
	if _, err := e.Backend.Append(t.Context(), testBasin, stream, in); err != nil {
		t.Fatal(err)
	}
}

// CreateStream creates a stream in TestBasin through the backend.
func (e *Env) CreateStream(t testing.TB, name string) { e.createStream(t, name) }

func (e *Env) createStream(t testing.TB, name string) {
	t.Helper()
	if _, err := e.Backend.CreateStream(t.Context(), testBasin, name, s2api.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
}

func (e *Env) appendNIn(t *testing.T, basin, stream string, n int) {
	t.Helper()
	in := batchfmt.AppendInput{}
	for i := 0; i < n; i++ {
		in.Records = append(in.Records, batchfmt.Record{Body: []byte(fmt.Sprintf("r%d", i)), Timestamp: 1709481600000, HasTimestamp: true})
	}
	if _, err := e.Backend.Append(t.Context(), basin, stream, in); err != nil {
		t.Fatal(err)
	}
}
