package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/server"
)

// Bad input through the HTTP API, on the real engine over a MemStore: whatever a client
// sends, the answer is a 2xx or a 4xx with S2's error body, never a 5xx or a panic.

const fuzzBasin = "fuzz-basin"

// newEngineServer returns a server over a fresh engine on a MemStore with basin fuzz-basin
// and stream "s" holding a few records.
func newEngineServer(tb testing.TB, opts ...server.Option) *server.Server {
	tb.Helper()
	cfg := engine.DefaultConfig()
	cfg.Store = objectstore.NewMemStore()
	eng, err := engine.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := server.New(eng.S2(), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(ctx)
	})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/basins", `{"basin":"` + fuzzBasin + `"}`},
		{"POST", "/v1/streams", `{"stream":"s"}`},
		{"POST", "/v1/streams/s/records", `{"records":[{"body":"one"},{"body":"two","headers":[["h","v"]]},{"body":"three","timestamp":5}]}`},
	} {
		rec := serve(srv, c.method, c.path, c.body, nil)
		if rec.Code/100 != 2 {
			tb.Fatalf("setup %s %s: %d %s", c.method, c.path, rec.Code, rec.Body.String())
		}
	}
	return srv
}

func serve(srv http.Handler, method, target, body string, hdr http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", strings.NewReader(body))
	// Set the raw target by hand: httptest.NewRequest panics on some malformed targets, and
	// a real server receives them anyway.
	if u, err := req.URL.Parse(target); err == nil {
		req.URL = u
		req.RequestURI = target
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("S2-Basin", fuzzBasin)
	for k, v := range hdr {
		req.Header[k] = v
	}
	ctx, cancel := context.WithTimeout(req.Context(), 3*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req.WithContext(ctx))
	return rec
}

// checkAnswer: a 2xx, or a 4xx whose body is S2's error JSON; never a 5xx.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	body := rec.Body.Bytes()
	switch {
	case rec.Code >= 200 && rec.Code < 300:
		return
	case rec.Code >= 500 || rec.Code < 200:
		t.Fatalf("%s: status %d, body %q", what, rec.Code, body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: %d with Content-Type %q", what, rec.Code, ct)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %d body %q is not a JSON object: %v", what, rec.Code, body, err)
	}
	switch rec.Code {
	case http.StatusPreconditionFailed:
		if m["seq_num_mismatch"] == nil && m["fencing_token_mismatch"] == nil {
			t.Fatalf("%s: 412 body %q", what, body)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if m["tail"] == nil {
			t.Fatalf("%s: 416 body %q", what, body)
		}
	default:
		var e struct{ Code, Message string }
		if err := json.Unmarshal(body, &e); err != nil || e.Code == "" || e.Message == "" {
			t.Fatalf("%s: %d body %q is not {code, message}", what, rec.Code, body)
		}
	}
}

// badInputs are requests that must be refused with a 4xx; they are also FuzzHTTPAPI's seeds.
var badInputs = []struct {
	method, path, body string
}{
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x"}`},                     // truncated JSON
	{"POST", "/v1/streams/s/records", `{"records":{"body":"x"}}`},                     // object for array
	{"POST", "/v1/streams/s/records", `{"records":[{"body":5}]}`},                     // number for string
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x","timestamp":-1}]}`},    // negative
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x","timestamp":1e400}]}`}, // huge
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x","timestamp":18446744073709551616}]}`},
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x"}],"match_seq_num":-5}`},
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x"}],"match_seq_num":"0"}`},
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x"}],"match_seq_num":99}`}, // 412
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x"}],"fencing_token":"` + strings.Repeat("t", 100) + `"}`},
	{"POST", "/v1/streams/s/records", `{"records":[{"headers":[["a"]],"body":"x"}]}`},
	{"POST", "/v1/streams/s/records", `{"records":[{"headers":[[1,2]],"body":"x"}]}`},
	{"POST", "/v1/streams/s/records", `{"records":[]}`},
	{"POST", "/v1/streams/s/records", `null`},
	{"POST", "/v1/streams/s/records", ``},
	{"POST", "/v1/streams/s/records", "\xff\xfe"},
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x","headers":[["","trim"]]}]}`}, // trim without a seq_num body
	{"POST", "/v1/streams/s/records", `{"records":[{"body":"x","headers":[["","nope"]]}]}`},
	{"GET", "/v1/streams/s/records?seq_num=-1", ``},
	{"GET", "/v1/streams/s/records?seq_num=99999999999999999999999", ``},
	{"GET", "/v1/streams/s/records?seq_num=1000", ``}, // 416
	{"GET", "/v1/streams/s/records?seq_num=0&timestamp=0", ``},
	{"GET", "/v1/streams/s/records?count=-1", ``},
	{"GET", "/v1/streams/s/records?count=abc&seq_num=0", ``},
	{"GET", "/v1/streams/s/records?wait=1000000&seq_num=0", ``},
	{"GET", "/v1/streams/s/records?bytes=1e9&seq_num=0", ``},
	{"GET", "/v1/streams/s/records?until=-3&seq_num=0", ``},
	{"GET", "/v1/streams/s/records?seq_num=0&clamp=maybe", ``},
	{"GET", "/v1/streams/..%2F..%2Fetc/records/tail", ``},
	{"GET", "/v1/streams/%2e%2e/records/tail", ``},
	{"GET", "/v1/streams/a%00b/records/tail", ``},
	{"GET", "/v1/streams/%ff%fe/records/tail", ``},
	{"GET", "/v1/streams/" + strings.Repeat("n", 600) + "/records/tail", ``},
	{"POST", "/v1/streams", `{"stream":""}`},
	{"POST", "/v1/streams", `{"stream":"s"}`}, // exists
	{"POST", "/v1/streams", `{"stream":"n","config":{"retention_policy":{"age":-1}}}`},
	{"POST", "/v1/streams", `{"stream":"n","config":{"retention_policy":{"age":1e30}}}`},
	{"POST", "/v1/streams", `{"stream":"n","config":{"timestamping":{"mode":"sideways"}}}`},
	{"POST", "/v1/streams", `{"stream":"n","config":{"storage_class":7}}`},
	{"POST", "/v1/streams", `{"stream":["n"]}`},
	{"PATCH", "/v1/streams/s", `{"retention_policy":"forever"}`},
	{"PUT", "/v1/streams/s", `{"delete_on_empty":{"min_age_secs":-1}}`},
	{"GET", "/v1/streams?limit=-1", ``},
	{"POST", "/v1/basins", `{"basin":"UPPER"}`},
	{"POST", "/v1/basins", `{"basin":"a"}`},
	{"POST", "/v1/basins", `{"basin":"` + strings.Repeat("b", 100) + `"}`},
	{"POST", "/v1/basins", `{"basin":"-lead"}`},
	{"GET", "/v1/basins/..", ``},
	{"DELETE", "/v1/basins/nope-nope", ``},
	{"TRACE", "/v1/streams/s", ``},
	{"GET", "/v1/nothing/here", ``},
}

// oddInputs are legal but unusual requests: any 2xx or 4xx will do (S2 accepts any UTF-8
// stream name; package catalog keeps such names inside their prefix).
var oddInputs = []struct {
	method, path, body string
}{
	{"POST", "/v1/streams", `{"stream":"../x"}`},
	{"POST", "/v1/streams", `{"stream":"a/b/../../c"}`},
	{"GET", "/v1/streams/..%2Fx/records/tail", ``},
	{"GET", "/v1/streams?limit=1000000000000", ``},
	{"GET", "/v1/streams/s/records?seq_num=0&count=0", ``},
}

// Base64 bodies under S2-Format: base64.
var badBase64 = []string{
	`{"records":[{"body":"!!!"}]}`,
	`{"records":[{"body":"YQ==","headers":[["***","YQ=="]]}]}`,
	`{"records":[{"body":"YQ===="}]}`,
}

func TestHTTPBadInputIs4xx(t *testing.T) {
	srv := newEngineServer(t)
	for _, c := range badInputs {
		rec := serve(srv, c.method, c.path, c.body, nil)
		what := fmt.Sprintf("%s %s %.80q", c.method, c.path, c.body)
		checkAnswer(t, what, rec)
		if rec.Code/100 != 4 {
			t.Errorf("%s: status %d, want 4xx (body %s)", what, rec.Code, rec.Body.String())
		}
	}
	for _, body := range badBase64 {
		rec := serve(srv, "POST", "/v1/streams/s/records", body, http.Header{"S2-Format": {"base64"}})
		checkAnswer(t, "base64 "+body, rec)
		if rec.Code/100 != 4 {
			t.Errorf("base64 %s: status %d, want 4xx", body, rec.Code)
		}
	}
	for _, c := range oddInputs {
		checkAnswer(t, fmt.Sprintf("%s %s %.80q", c.method, c.path, c.body), serve(srv, c.method, c.path, c.body, nil))
	}
	// Nothing of the refused appends reached the stream (their records' bodies are "x").
	rec := serve(srv, "GET", "/v1/streams/s/records?seq_num=0&count=1000", "", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"three"`) || strings.Contains(rec.Body.String(), `"body":"x"`) {
		t.Errorf("stream after bad input: %d %s", rec.Code, rec.Body.String())
	}
}

// FuzzHTTPAPI sends fuzzed method, path, query, headers and body to the API.
func FuzzHTTPAPI(f *testing.F) {
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
	for _, c := range badInputs {
		m := 0
		for i, x := range methods {
			if x == c.method {
				m = i
			}
		}
		f.Add(uint8(m), c.path, c.body, "", "")
	}
	for _, c := range oddInputs {
		f.Add(uint8(0), c.path, c.body, "", "")
	}
	for _, b := range badBase64 {
		f.Add(uint8(1), "/v1/streams/s/records", b, "base64", "")
	}
	f.Add(uint8(0), "/v1/streams/s/records?seq_num=0", "", "", "application/protobuf")
	f.Add(uint8(1), "/v1/streams/s/records", "\x0a\x03\x1a\x01x", "", "application/protobuf")
	f.Add(uint8(1), "/v1/streams/s/records", "\x0a\xff\xff\xff\xff\x0f", "", "application/protobuf")
	f.Add(uint8(0), "/v1/streams/s/records?seq_num=0&count=1", "", "raw", "")
	srv := newEngineServer(f)
	f.Fuzz(func(t *testing.T, m uint8, target, body, format, ctype string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		// Unbounded waits and sessions are not unary requests; the session tests cover them.
		if strings.Contains(target, "wait=") {
			return
		}
		hdr := http.Header{}
		if format != "" {
			hdr.Set("S2-Format", format)
		}
		if ctype != "" {
			if strings.Contains(strings.ToLower(ctype), "s2s") || strings.Contains(ctype, "event-stream") {
				return
			}
			hdr.Set("Content-Type", ctype)
			hdr.Set("Accept", ctype)
		}
		method := methods[int(m)%len(methods)]
		checkAnswer(t, fmt.Sprintf("%s %q %q (format %q, type %q)", method, target, body, format, ctype), serve(srv, method, target, body, hdr))
	})
}

// TestHTTPOversizedBody: a body past the limit is refused with 413 without being read to its
// end: the client streams an endless body and still gets its answer.
func TestHTTPOversizedBody(t *testing.T) {
	srv := newEngineServer(t, server.WithMaxBodyBytes(1<<20))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	endless := io.MultiReader(strings.NewReader(`{"records":[{"body":"`), &zeros{})
	req, err := http.NewRequest("POST", ts.URL+"/v1/streams/s/records", endless)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("S2-Basin", fuzzBasin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("endless body: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "request_too_large") {
		t.Fatalf("endless body: %d %s", resp.StatusCode, b)
	}
}

// zeros is an endless body of 'a's.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	z.n += int64(len(p))
	return len(p), nil
}

// TestHTTPSlowBody: a client that sends its body a byte at a time, forever, is cut off by the
// server's deadline (WithWriteTimeout bounds reading a unary request) instead of holding a
// handler and its memory: the connection ends although the client never stops sending.
func TestHTTPSlowBody(t *testing.T) {
	srv := newEngineServer(t, server.WithWriteTimeout(300*time.Millisecond))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/streams/s/records HTTP/1.1\r\nHost: x\r\nS2-Basin: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", fuzzBasin)
	ended := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(conn) // returns when the server answers and closes, or resets
		ended <- b
	}()
	// Dribble for at most 200 writes (20 s at 100 ms); the server must end it long before.
	r := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case b := <-ended:
			t.Logf("server ended the slow request after %d body bytes; answered %q", i+1, b)
			if len(b) > 0 && (!bytes.HasPrefix(b, []byte("HTTP/1.1 408")) || !bytes.Contains(b, []byte(`"request_timeout"`))) {
				t.Errorf("slow body answered %q, want 408 request_timeout or a closed connection", b)
			}
			return
		case <-tick.C:
			if i == 200 {
				t.Fatal("the server still reads a body that has trickled for 20 s (no read deadline)")
			}
			if _, err := conn.Write([]byte{byte('a' + r.IntN(26))}); err != nil && !errors.Is(err, net.ErrClosed) {
				// The server closed its side; wait for the reader.
				continue
			}
		}
	}
}
