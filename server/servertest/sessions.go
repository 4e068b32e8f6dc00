package servertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
)

// openStream starts a request and returns the response with its body still open.
func (e *Env) openStream(t *testing.T, c *http.Client, method, path string, hdr map[string]string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", testBasin)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func sseBatch(t *testing.T, ev s2api.SSEEvent) s2api.ReadBatch {
	t.Helper()
	if ev.Event != "batch" {
		t.Fatalf("event %q, want batch: %s", ev.Event, ev.Data)
	}
	rb, err := s2api.DecodeReadBatchJSON([]byte(ev.Data), s2api.FormatRaw)
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

func nextEvent(t *testing.T, rd *s2api.SSEReader) s2api.SSEEvent {
	t.Helper()
	ev, err := rd.Next()
	if err != nil {
		t.Fatalf("next SSE event: %v", err)
	}
	return ev
}

func testSSEFollow(t *testing.T, fac Factory) {
	env := startServer(t, fac, server.WithHeartbeatInterval(30*time.Millisecond))
	env.createStream(t, "s")
	env.appendN(t, "s", 3)
	res := env.openStream(t, env.H1, "GET", "/v1/streams/s/records?seq_num=0", map[string]string{"Accept": "text/event-stream"}, nil)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("response %d %v", res.StatusCode, res.Header)
	}
	rd := s2api.NewSSEReader(res.Body, 1<<22)
	ev := nextEvent(t, rd)
	rb := sseBatch(t, ev)
	if len(rb.Records) != 3 || rb.Tail.SeqNum != 3 || ev.ID != "2,3,30" {
		t.Fatalf("first batch id %q %+v", ev.ID, rb)
	}
	// Caught up (the batch reached the tail), idle: pings with the tail.
	ev = nextEvent(t, rd)
	if ev.Event != "ping" || !strings.Contains(ev.Data, `"tail":{"seq_num":3,`) {
		t.Fatalf("want ping, got %+v", ev)
	}
	env.appendN(t, "s", 2)
	for {
		ev = nextEvent(t, rd)
		if ev.Event != "ping" {
			break
		}
	}
	rb = sseBatch(t, ev)
	if len(rb.Records) != 2 || rb.Records[0].SeqNum != 3 || ev.ID != "4,5,50" {
		t.Fatalf("live batch id %q %+v", ev.ID, rb)
	}
}

func testSSEBoundedSessionsEnd(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	env.createStream(t, "s")
	env.appendN(t, "s", 3)
	events := func(path string, hdr map[string]string) []s2api.SSEEvent {
		t.Helper()
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["Accept"] = "text/event-stream"
		res := env.openStream(t, env.H1, "GET", path, hdr, nil)
		if res.StatusCode != 200 {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("%s: %d %s", path, res.StatusCode, b)
		}
		rd := s2api.NewSSEReader(res.Body, 1<<22)
		var out []s2api.SSEEvent
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
	}
	// count reached: the body ends after the batch.
	evs := events("/v1/streams/s/records?seq_num=0&count=2", nil)
	if len(evs) != 1 || len(sseBatch(t, evs[0]).Records) != 2 {
		t.Fatalf("count=2: %+v", evs)
	}
	// count not reachable: the batch, then the caught-up empty batch with the tail, then the end.
	evs = events("/v1/streams/s/records?seq_num=1&count=10", nil)
	if len(evs) != 1 || len(sseBatch(t, evs[0]).Records) != 2 {
		// The data batch reaches the tail, so it is itself the caught-up signal.
		t.Fatalf("count=10: %+v", evs)
	}
	evs = events("/v1/streams/s/records?seq_num=3&count=10", nil)
	if len(evs) != 1 || len(sseBatch(t, evs[0]).Records) != 0 || sseBatch(t, evs[0]).Tail.SeqNum != 3 {
		t.Fatalf("at tail: %+v", evs)
	}
	// bytes: the records that fit (10 metered bytes each), then the end.
	evs = events("/v1/streams/s/records?seq_num=0&bytes=25", nil)
	if len(evs) != 1 || len(sseBatch(t, evs[0]).Records) != 2 {
		t.Fatalf("bytes=25: %+v", evs)
	}
	if evs = events("/v1/streams/s/records?seq_num=0&bytes=5", nil); len(evs) != 0 {
		t.Fatalf("bytes=5: %+v", evs)
	}
	// Last-Event-ID resumes after the last record, with the remaining count.
	evs = events("/v1/streams/s/records?seq_num=0&count=2", map[string]string{"Last-Event-ID": "0,1,10"})
	if len(evs) != 1 || sseBatch(t, evs[0]).Records[0].SeqNum != 1 || len(sseBatch(t, evs[0]).Records) != 1 {
		t.Fatalf("resume: %+v", evs)
	}
	// until
	evs = events("/v1/streams/s/records?seq_num=0&until=1", nil)
	if len(evs) != 0 && len(sseBatch(t, evs[0]).Records) != 0 {
		t.Fatalf("until: %+v", evs)
	}
	// Errors before the stream starts are HTTP statuses.
	r := env.do(t, "GET", "/v1/streams/s/records?seq_num=9", map[string]string{"Accept": "text/event-stream"}, nil)
	expect(t, "416", r, 416, `{"tail":{"seq_num":3,"timestamp":`+fmt.Sprint(tailTS(t, env, "s"))+`}}`)
	r = env.do(t, "GET", "/v1/streams/none/records", map[string]string{"Accept": "text/event-stream"}, nil)
	expect(t, "404", r, 404, "")
}

func tailTS(t *testing.T, env *Env, s string) uint64 {
	p, err := env.Backend.CheckTail(t.Context(), testBasin, s)
	if err != nil {
		t.Fatal(err)
	}
	return p.Timestamp
}

func testS2SReadSessionOverH2C(t *testing.T, fac Factory) {
	env := startServer(t, fac, server.WithHeartbeatInterval(30*time.Millisecond))
	env.createStream(t, "s")
	env.appendN(t, "s", 2)
	res := env.openStream(t, env.H2C, "GET", "/v1/streams/s/records?seq_num=0", map[string]string{"Content-Type": "s2s/proto", "Accept": "application/protobuf"}, nil)
	if res.ProtoMajor != 2 || res.StatusCode != 200 || res.Header.Get("Content-Type") != "s2s/proto" {
		t.Fatalf("response %s %d %v", res.Proto, res.StatusCode, res.Header)
	}
	fr := s2api.NewFrameReader(res.Body, 0)
	next := func() s2api.ReadBatch {
		t.Helper()
		f, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Terminal {
			t.Fatalf("terminal frame %d %s", f.Status, f.Body)
		}
		rb, err := s2api.DecodeReadBatchProto(f.Body)
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
	rb := next()
	if len(rb.Records) != 2 || rb.Tail == nil || rb.Tail.SeqNum != 2 {
		t.Fatalf("first batch %+v", rb)
	}
	rb = next()
	if len(rb.Records) != 0 || rb.Tail == nil || rb.Tail.SeqNum != 2 {
		t.Fatalf("heartbeat %+v", rb)
	}
	env.appendN(t, "s", 1)
	for len(rb.Records) == 0 {
		rb = next()
	}
	if rb.Records[0].SeqNum != 2 || string(rb.Records[0].Body) != "r0" {
		t.Fatalf("live %+v", rb)
	}
	// Deleting the stream ends the session with a terminal 404 frame.
	if err := env.Backend.DeleteStream(t.Context(), testBasin, "s"); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Terminal {
			if f.Status != 404 || !errors.Is(f.Err(), s2api.ErrStreamNotFound) {
				t.Fatalf("terminal %d %s", f.Status, f.Body)
			}
			break
		}
	}
	// A start past the tail is an HTTP 416 before the session starts.
	env.createStream(t, "t")
	r := env.doWith(t, env.H2C, "GET", "/v1/streams/t/records?seq_num=5", map[string]string{"Content-Type": "s2s/proto"}, nil)
	expect(t, "416", r, 416, `{"tail":{"seq_num":0,"timestamp":0}}`)
}

func testS2SAppendSessionOverH2C(t *testing.T, fac Factory) {
	testS2SAppendSession(t, fac, true)
}

func testS2SAppendSessionOverHTTP1(t *testing.T, fac Factory) {
	testS2SAppendSession(t, fac, false)
}

func testS2SAppendSession(t *testing.T, fac Factory, h2 bool) {
	env := startServer(t, fac)
	env.createStream(t, "s")
	client, major := env.H1, 1
	if h2 {
		client, major = env.H2C, 2
	}
	pr, pw := io.Pipe()
	res := env.openStream(t, client, "POST", "/v1/streams/s/records", map[string]string{"Content-Type": "s2s/proto", "Accept": "application/protobuf"}, pr)
	defer pw.Close()
	if res.ProtoMajor != major || res.StatusCode != 200 {
		t.Fatalf("response %s %d", res.Proto, res.StatusCode)
	}
	send := func(in batchfmt.AppendInput, comp s2api.Compression) {
		t.Helper()
		f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &in), Compression: comp})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte("z"), 5000)
	// Pipelined: three inputs before reading any ack.
	send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("a")}, {Body: []byte("b")}}}, s2api.CompressionNone)
	send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: big}}}, s2api.CompressionZstd)
	send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: big}}, MatchSeqNum: ptr(uint64(3))}, s2api.CompressionGzip)
	fr := s2api.NewFrameReader(res.Body, 0)
	var last uint64
	for i, want := range [][2]uint64{{0, 2}, {2, 3}, {3, 4}} {
		f, err := fr.Next()
		if err != nil || f.Terminal {
			t.Fatalf("ack %d: %+v %v", i, f, err)
		}
		ack, err := s2api.DecodeAppendAckProto(f.Body)
		// The tail is the stream's at the commit: past End when later inputs of the session
		// committed with this one.
		if err != nil || ack.Start.SeqNum != want[0] || ack.End.SeqNum != want[1] || ack.Tail.SeqNum < want[1] || ack.Tail.SeqNum > 4 || ack.End.SeqNum <= last {
			t.Fatalf("ack %d: %+v %v", i, ack, err)
		}
		last = ack.End.SeqNum
	}
	// A failed condition ends the session with a terminal frame carrying the typed body.
	send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}, MatchSeqNum: ptr(uint64(0))}, s2api.CompressionNone)
	f, err := fr.Next()
	if err != nil || !f.Terminal || f.Status != 412 || string(f.Body) != `{"seq_num_mismatch":4}` {
		t.Fatalf("terminal %+v %v", f, err)
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("after terminal frame: %v", err)
	}

	// A malformed frame is a terminal 400 bad_frame.
	pr2, pw2 := io.Pipe()
	res2 := env.openStream(t, client, "POST", "/v1/streams/s/records", map[string]string{"Content-Type": "s2s/proto"}, pr2)
	defer pw2.Close()
	if _, err := pw2.Write([]byte{0, 0, 2, 0x60, 1}); err != nil {
		t.Fatal(err)
	}
	f, err = s2api.NewFrameReader(res2.Body, 0).Next()
	if err != nil || !f.Terminal || f.Status != 400 || !strings.Contains(string(f.Body), "bad_frame") {
		t.Fatalf("bad frame: %+v %v", f, err)
	}
}

// testCloseEndsSessions: Close ends live read sessions with a retryable error (503
// unavailable: an SSE error event, an S2S terminal frame), which S2's SDK retries, not with
// a clean end of the response, which a client following the stream takes for the end of its
// read; then the API answers 503.
func testCloseEndsSessions(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	env.createStream(t, "s")
	res := env.openStream(t, env.H1, "GET", "/v1/streams/s/records", map[string]string{"Accept": "text/event-stream"}, nil)
	rd := s2api.NewSSEReader(res.Body, 1<<20)
	sseBatch(t, nextEvent(t, rd)) // the caught-up batch: the session is running
	s2s := env.openStream(t, env.H2C, "GET", "/v1/streams/s/records?seq_num=0", map[string]string{"Content-Type": "s2s/proto", "Accept": "application/protobuf"}, nil)
	fr := s2api.NewFrameReader(s2s.Body, 0)
	if f, err := fr.Next(); err != nil || f.Terminal {
		t.Fatalf("s2s caught-up batch: %+v %v", f, err)
	}
	done := make(chan error, 1)
	go func() { done <- env.Server.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	ev := nextEvent(t, rd)
	for ev.Event == "ping" {
		ev = nextEvent(t, rd)
	}
	if ev.Event != "error" || !strings.Contains(ev.Data, `"unavailable"`) {
		t.Fatalf("SSE session after Close: event %q %s, want an error event with code unavailable", ev.Event, ev.Data)
	}
	if _, err := rd.Next(); err == nil {
		t.Fatal("session still delivering after Close")
	}
	f, err := fr.Next()
	for err == nil && !f.Terminal && len(f.Body) == 0 { // heartbeats
		f, err = fr.Next()
	}
	if err != nil || !f.Terminal || f.Status != 503 || !strings.Contains(string(f.Body), "unavailable") {
		t.Fatalf("S2S session after Close: frame %+v %v, want a terminal 503 unavailable", f, err)
	}
	r := env.do(t, "GET", "/v1/basins", nil, nil)
	expect(t, "after close", r, 503, "")
}

func testStuckClientIsDisconnected(t *testing.T, fac Factory) {
	reg := prometheus.NewRegistry()
	env := startServer(t, fac, server.WithWriteTimeout(100*time.Millisecond), server.WithRegisterer(reg))
	env.createStream(t, "s")
	appendBacklog(t, env, "s")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", env.URL+"/v1/streams/s/records?seq_num=0", nil)
	req.Header.Set("S2-Basin", testBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	res, err := env.H2C.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// Never read the body. The server's writes stall on flow control, hit the write timeout,
	// and the session ends: the open-session gauge drops back to 0.
	open := func() float64 { return openSessions(t, reg) }
	deadline := time.Now().Add(20 * time.Second)
	sawOpen := false
	for time.Now().Before(deadline) {
		v := open()
		if v > 0 {
			sawOpen = true
		} else if sawOpen {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("session still open after 20s with a stuck client (saw open: %v)", sawOpen)
}

// appendBacklog appends 12 MiB of records to stream, more than an HTTP/2 client's default
// flow-control window (4 MiB per stream), with random bodies: the client asks for compressed
// frames (Go's transport sends Accept-Encoding: gzip), and repeated bytes would shrink to a
// few KiB on the wire, inside the window, so that a client that never reads would still
// take them all.
func appendBacklog(t *testing.T, env *Env, stream string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 12; i++ {
		in := batchfmt.AppendInput{Records: make([]batchfmt.Record, 1000)}
		for j := range in.Records {
			body := make([]byte, 1000)
			for k := range body {
				body[k] = byte(r.Uint32())
			}
			in.Records[j] = batchfmt.Record{Body: body}
		}
		if _, err := env.Backend.Append(t.Context(), testBasin, stream, in); err != nil {
			t.Fatal(err)
		}
	}
}

// testStuckClientBesideIdleClient runs two S2S read sessions over one HTTP/2 connection,
// with a write timeout longer than the heartbeat interval, as the defaults are (30 s and
// 10 s; here 1.5 s and 300 ms): one never reads its 12 MiB backlog, the other reads but has
// nothing to read. The stuck one is disconnected once its writes stall for the write
// timeout; the idle one, kept alive by heartbeats, stays open well past that.
func testStuckClientBesideIdleClient(t *testing.T, fac Factory) {
	const writeTimeout = 1500 * time.Millisecond
	reg := prometheus.NewRegistry()
	env := startServer(t, fac, server.WithWriteTimeout(writeTimeout), server.WithHeartbeatInterval(300*time.Millisecond), server.WithRegisterer(reg))
	env.createStream(t, "stuck")
	env.createStream(t, "idle")
	appendBacklog(t, env, "stuck")
	open := func(stream string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", env.URL+"/v1/streams/"+stream+"/records?seq_num=0", nil)
		req.Header.Set("S2-Basin", testBasin)
		req.Header.Set("Content-Type", "s2s/proto")
		res, err := env.H2C.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.ProtoMajor != 2 || res.StatusCode != 200 {
			t.Fatalf("%s: %s %s", stream, res.Proto, res.Status)
		}
		return res
	}
	idle := open("idle")
	idleEnded := make(chan error, 1)
	var idleBytes atomic.Int64
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := idle.Body.Read(buf)
			idleBytes.Add(int64(n))
			if err != nil {
				idleEnded <- err
				return
			}
		}
	}()
	open("stuck") // never read
	deadline := time.Now().Add(20 * time.Second)
	for openSessions(t, reg) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("sessions open: %v, want 2", openSessions(t, reg))
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	for openSessions(t, reg) > 1 {
		if time.Now().After(deadline) {
			t.Fatal("the stuck session is still open after 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("stuck session ended %v after both were open", time.Since(start).Round(time.Millisecond))
	before := idleBytes.Load()
	select {
	case err := <-idleEnded:
		t.Fatalf("the idle session ended too: %v", err)
	case <-time.After(3 * writeTimeout):
	}
	if got := openSessions(t, reg); got != 1 {
		t.Fatalf("sessions open: %v, want the idle one", got)
	}
	if idleBytes.Load() == before {
		t.Fatal("the idle session received no heartbeat in three write timeouts")
	}
}

// testIdleSessionsOutliveWriteTimeout keeps S2S and SSE read sessions idle over HTTP/2 with
// a write timeout shorter than the heartbeat interval: each write's deadline is cleared once
// the write is done (on HTTP/2 a deadline that passes resets the stream even with nothing
// being written), so the sessions live on and send their heartbeats (S2-API.md: a heartbeat
// at least every 15 s).
func testIdleSessionsOutliveWriteTimeout(t *testing.T, fac Factory) {
	env := startServer(t, fac, server.WithWriteTimeout(200*time.Millisecond), server.WithHeartbeatInterval(500*time.Millisecond))
	env.createStream(t, "s")
	for _, kind := range []string{"s2s", "sse"} {
		t.Run(kind, func(t *testing.T) {
			hdr := map[string]string{"Accept": "text/event-stream"}
			if kind == "s2s" {
				hdr = map[string]string{"Content-Type": "s2s/proto"}
			}
			res := env.openStream(t, env.H2C, "GET", "/v1/streams/s/records", hdr, nil)
			if res.ProtoMajor != 2 {
				t.Fatalf("response over %s", res.Proto)
			}
			// The caught-up batch, then two heartbeats: more than three write timeouts idle.
			if kind == "s2s" {
				fr := s2api.NewFrameReader(res.Body, 0)
				for i := 0; i < 3; i++ {
					f, err := fr.Next()
					if err != nil || f.Terminal {
						t.Fatalf("frame %d: %+v, %v", i, f, err)
					}
					if rb, err := s2api.DecodeReadBatchProto(f.Body); err != nil || len(rb.Records) != 0 || rb.Tail == nil {
						t.Fatalf("frame %d: %+v, %v", i, rb, err)
					}
				}
				return
			}
			rd := s2api.NewSSEReader(res.Body, 1<<20)
			for i, want := range []string{"batch", "ping", "ping"} {
				if ev := nextEvent(t, rd); ev.Event != want {
					t.Fatalf("event %d: %q %s, want %s", i, ev.Event, ev.Data, want)
				}
			}
		})
	}
}

// testTimestampStartPastTheTail: a timestamp after the tail's (the last record's timestamp)
// is a start past the tail, as S2 has it (s2-lite's read_start_seq_num; the SDK documents
// clamp as "Start reading from the tail if the requested position is beyond it. Otherwise, a
// `416 Range Not Satisfiable` response is returned."): a 416 with the tail for unary reads and
// sessions, or with clamp=true the tail's seq_num, from which the next record is read whatever
// its timestamp. A timestamp equal to the tail's is not past it. (The server answered 200 and
// started at the tail, reading only records at or after the timestamp.)
func testTimestampStartPastTheTail(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	env.createStream(t, "s")
	app := func(ts uint64) {
		t.Helper()
		in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x"), Timestamp: ts, HasTimestamp: true}}}
		if _, err := env.Backend.Append(t.Context(), testBasin, "s", in); err != nil {
			t.Fatal(err)
		}
	}
	app(100)
	const tail = `{"tail":{"seq_num":1,"timestamp":100}}`
	expect(t, "unary read past the tail's timestamp", env.do(t, "GET", "/v1/streams/s/records?timestamp=1000", nil, nil), 416, tail)
	expect(t, "bounded unary read past the tail's timestamp", env.do(t, "GET", "/v1/streams/s/records?timestamp=101&count=5", nil, nil), 416, tail)
	r := env.do(t, "GET", "/v1/streams/s/records?timestamp=1000", map[string]string{"Accept": "text/event-stream"}, nil)
	expect(t, "SSE session past the tail's timestamp", r, 416, tail)
	r = env.do(t, "GET", "/v1/streams/s/records?timestamp=100", nil, nil)
	expect(t, "unary read at the tail's timestamp", r, 200, "")
	if rb, err := s2api.DecodeReadBatchJSON(r.body, s2api.FormatRaw); err != nil || len(rb.Records) != 1 || rb.Records[0].SeqNum != 0 {
		t.Fatalf("read at timestamp=100: %s", r.body)
	}
	r = env.do(t, "GET", "/v1/streams/s/records?timestamp=1000&clamp=true", nil, nil)
	expect(t, "clamped unary read", r, 200, "")
	if rb, err := s2api.DecodeReadBatchJSON(r.body, s2api.FormatRaw); err != nil || len(rb.Records) != 0 {
		t.Fatalf("clamped read past the tail: %s", r.body)
	}

	res := env.openStream(t, env.H1, "GET", "/v1/streams/s/records?timestamp=1000&clamp=true", map[string]string{"Accept": "text/event-stream"}, nil)
	if res.StatusCode != 200 {
		t.Fatalf("clamped session: status %d", res.StatusCode)
	}
	rd := s2api.NewSSEReader(res.Body, 1<<20)
	if rb := sseBatch(t, nextEvent(t, rd)); len(rb.Records) != 0 {
		t.Fatalf("caught-up batch holds %+v", rb.Records)
	}
	app(500) // older than the start, but the clamped start is the tail's seq_num
	for {
		ev := nextEvent(t, rd)
		if ev.Event == "ping" {
			continue
		}
		rb := sseBatch(t, ev)
		if len(rb.Records) == 0 {
			continue
		}
		if rb.Records[0].SeqNum != 1 || rb.Records[0].Timestamp != 500 {
			t.Fatalf("first record of the clamped session: seq_num %d timestamp %d, want 1 and 500", rb.Records[0].SeqNum, rb.Records[0].Timestamp)
		}
		return
	}
}

// openSessions reads sluice_api_open_sessions{kind="s2s_read"} from reg.
func openSessions(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return OpenSessions(t, reg, "s2s_read")
}

// OpenSessions reads sluice_api_open_sessions{kind=kind} from reg (0 when absent).
func OpenSessions(t testing.TB, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_api_open_sessions" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}
