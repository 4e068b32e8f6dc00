package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
	"github.com/sluice-dev/sluice/stream"
)

// TestAppendSessionPipelines: an append session hands its inputs to the producer as they
// arrive rather than one commit round trip each, so that many pipelined inputs (as S2's
// clients send them, waiting at most 5 s for each ack) commit in a few manifest writes and
// are acknowledged in order, not one commit per input, a flush interval apart (800
// single-record inputs would take 800 commits, and ack 446 come after 5 s).
func TestAppendSessionPipelines(t *testing.T) {
	var e *Engine
	env := servertest.Start(t, func(t testing.TB) server.Backend {
		e = newEngine(t, objectstore.NewMemStore(), nil)
		return e.S2()
	})
	env.CreateStream(t, "p")
	sess := env.OpenAppendSession(t, "p")
	const inputs = 800
	go func() {
		for i := range inputs {
			if !sess.Send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: fmt.Appendf(nil, "record %d", i)}}}) {
				return
			}
		}
		sess.Close()
	}()
	for i := range inputs {
		f, err := sess.Next()
		if err != nil || f.Terminal {
			t.Fatalf("ack %d: %+v %s %v", i, f, f.Body, err)
		}
		a, err := s2api.DecodeAppendAckProto(f.Body)
		if err != nil || a.Start.SeqNum != uint64(i) || a.End.SeqNum != uint64(i+1) || a.Tail.SeqNum < a.End.SeqNum {
			t.Fatalf("ack %d: %+v %v", i, a, err)
		}
	}
	if _, err := sess.Next(); err != io.EOF {
		t.Fatalf("after the last ack: %v", err)
	}
	snap, err := e.Stream(t.Context(), servertest.TestBasin, "p")
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Tail.SeqNum != inputs {
		t.Fatalf("tail %d, want %d", snap.State.Tail.SeqNum, inputs)
	}
	batches := len(snap.State.Entries)
	t.Logf("%d inputs committed in %d batch objects", inputs, batches)
	if batches > inputs/8 {
		t.Fatalf("%d inputs went into %d batch objects: the session did not pipeline them", inputs, batches)
	}
}

// holdFirstUpload holds the first upload under prefix until gate closes, signalling entered.
type holdFirstUpload struct {
	objectstore.Store
	prefix  string
	gate    chan struct{}
	entered chan struct{}
	once    atomic.Bool // only the first data upload is held
}

func (g *holdFirstUpload) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasPrefix(key, g.prefix) && g.once.CompareAndSwap(false, true) {
		g.entered <- struct{}{}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, ctx.Err())
		}
	}
	return g.Store.Put(ctx, key, body, size, cond)
}

// A session's input is held in upload when its stream is deleted and created again; the
// session's next input goes to the new stream's producer. It must wait for the first to
// fail, then fail with ErrPrecedingAppendFailed, and the new stream must stay empty (before
// producer.Append with WithChain waited, the second committed while the first was still pending).
// The 200 ms only decides when the first is let go if the second is (rightly) waiting.
func TestAppendAsyncChainAcrossRecreate(t *testing.T) {
	ctx := t.Context()
	mem := objectstore.NewMemStore()
	st, _ := stream.Locate("", "s")
	g := &holdFirstUpload{Store: mem, prefix: st.DataPrefix() + "/", gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	e := newEngine(t, g, nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	in := func(b string) batchfmt.AppendInput {
		return batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(b)}}}
	}
	chain := new(producer.Chain)
	w1, err := e.AppendAsync(ctx, "", "s", in("first"), chain)
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	if _, err := e.DeleteStream(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	type res struct {
		w   func(context.Context) (producer.Ack, error)
		err error
	}
	second := make(chan res, 1)
	go func() {
		w, err := e.AppendAsync(ctx, "", "s", in("second"), chain)
		second <- res{w, err}
	}()
	var r res
	select {
	case r = <-second: // handed over at once: let it commit (or not) while first is held
		if r.err == nil {
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, r.err = r.w(wctx)
			cancel()
		}
		close(g.gate)
	case <-time.After(200 * time.Millisecond): // waiting for first, as it should
		close(g.gate)
		r = <-second
		if r.err == nil {
			_, r.err = r.w(ctx)
		}
	}
	if _, err := w1(ctx); err == nil {
		t.Fatalf("first committed into a deleted stream")
	}
	if !errors.Is(r.err, manifest.ErrPrecedingAppendFailed) {
		t.Errorf("second: %v, want ErrPrecedingAppendFailed", r.err)
	}
	tail, err := e.Tail(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	if tail.SeqNum != 0 {
		t.Errorf("new stream holds %d records after the session's first input failed", tail.SeqNum)
	}
}

// pipelinedSession sends inputs on one S2S append session (all written before any ack is
// read, as a pipelining client does) and returns the frames the server answers with.
func pipelinedSession(t *testing.T, env *servertest.Env, stream string, inputs []batchfmt.AppendInput) []s2api.Frame {
	t.Helper()
	var body bytes.Buffer
	for i := range inputs {
		f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &inputs[i])})
		if err != nil {
			t.Fatal(err)
		}
		body.Write(f)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", env.URL+"/v1/streams/"+stream+"/records", &body)
	req.Header.Set("S2-Basin", servertest.TestBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	res, err := env.H2C.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	fr := s2api.NewFrameReader(res.Body, 0)
	var out []s2api.Frame
	for {
		f, err := fr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Body = append([]byte(nil), f.Body...)
		out = append(out, f)
		if f.Terminal {
			return out
		}
	}
}

// TestSessionInputBeforeRefusedOneIsAcked: on a client-require stream, an append
// session's first input (timestamped) is valid and its second (without a timestamp) is not.
// S2 acknowledges the first and ends the session with the second's error. (Refusing the second at handover must not mark the chain failed: the first, still
// waiting for its commit, would be rejected too, with a misleading error.)
func TestSessionInputBeforeRefusedOneIsAcked(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		if r := apiDo(t, env, "POST", "/v1/streams", nil, []byte(`{"stream":"req","config":{"timestamping":{"mode":"client-require"}}}`)); r.status/100 != 2 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		frames := pipelinedSession(t, env, "req", []batchfmt.AppendInput{
			{Records: []batchfmt.Record{{Body: []byte("a"), Timestamp: 10, HasTimestamp: true}}},
			{Records: []batchfmt.Record{{Body: []byte("b")}}},
		})
		if len(frames) != 2 || frames[0].Terminal || !frames[1].Terminal {
			for i, f := range frames {
				t.Logf("frame %d: terminal=%v %s", i, f.Terminal, f.Body)
			}
			t.Fatalf("got %d frames, want an ack for the first input and then the second's error", len(frames))
		}
		if tail := apiTail(t, env, "req"); tail.SeqNum != 1 {
			t.Fatalf("tail %+v, want 1 (the first input committed)", tail)
		}
	})
}

// TestAppendAsyncRetriesOnFreshProducer: AppendAsync, like Append, means to retry a
// handover refused with ErrGenerationChanged (or producer.ErrClosed) once on a fresh producer,
// so the first input of an append session succeeds where a unary append in the same state
// does (the refusal must not mark the chain failed, which would refuse the retry with
// ErrPrecedingAppendFailed).
//
// The state: the stream was deleted and created again by another engine on the same store;
// this engine's cached producer learnt it from an append whose caller had gone (its wait
// ended first, so nothing evicted the producer): the producer is fatal and still cached.
func TestAppendAsyncRetriesOnFreshProducer(t *testing.T) {
	ctx := t.Context()
	store := objectstore.NewMemStore()
	e := newEngine(t, store, nil)
	e2 := newEngine(t, store, nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	in := func(b string) batchfmt.AppendInput {
		return batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(b)}}}
	}
	if _, err := e.Append(ctx, "", "s", in("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.DeleteStream(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	// A unary append whose client gives up before the commit.
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	_, err := e.Append(short, "", "s", in("gone"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Skipf("the short append ended with %v, not its deadline", err)
	}
	e.mu.Lock()
	op := e.producers[streamKey{"", "s"}]
	e.mu.Unlock()
	if op == nil {
		t.Fatal("producer not cached")
	}
	_ = op.p.Flush(ctx) // until its batch has resolved (failed: generation changed)

	wait, err := e.AppendAsync(ctx, "", "s", in("session first"), new(producer.Chain))
	if err != nil {
		// What Append does in the same state: it succeeds on a fresh producer.
		_, uerr := e.Append(ctx, "", "s", in("unary"))
		t.Fatalf("first input of a session: %v (a unary append now: %v)", err, uerr)
	}
	if _, err := wait(ctx); err != nil {
		t.Fatalf("first input of a session: wait: %v", err)
	}
}

// TestAbortedSessionsKeepTheConnection: clients that open read and append sessions (SSE and
// S2S) over one HTTP/2 connection and abort them, before or after the response starts, 32 at
// a time, 16,000 in all, never make the server close the connection (Go's rapid-reset guard
// answers ENHANCE_YOUR_CALM once more than four times MaxConcurrentStreams handlers of reset
// streams are still running): every session's handler returns as soon as its stream is
// reset.
func TestAbortedSessionsKeepTheConnection(t *testing.T) {
	env := servertest.Start(t, func(t testing.TB) server.Backend {
		return newEngine(t, objectstore.NewMemStore(), nil).S2()
	})
	if r := apiDo(t, env, "POST", "/v1/streams", nil, []byte(`{"stream":"s"}`)); r.status/100 != 2 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for _, kind := range []string{"sse", "s2s", "sse-early", "append-early", "append"} {
		var calm, other, ok atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					ctx, cancel := context.WithCancel(context.Background())
					var req *http.Request
					if strings.HasPrefix(kind, "append") {
						pr, pw := io.Pipe()
						defer pw.Close()
						req, _ = http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/streams/s/records", pr)
						req.Header.Set("Content-Type", "s2s/proto")
					} else {
						req, _ = http.NewRequestWithContext(ctx, "GET", env.URL+"/v1/streams/s/records?seq_num=0", nil)
						if strings.HasPrefix(kind, "sse") {
							req.Header.Set("Accept", "text/event-stream")
						} else {
							req.Header.Set("Content-Type", "s2s/proto")
						}
					}
					req.Header.Set("S2-Basin", servertest.TestBasin)
					if strings.HasSuffix(kind, "early") {
						go cancel()
					}
					res, err := env.H2C.Do(req)
					if err == nil {
						ok.Add(1)
						cancel()
						res.Body.Close()
						continue
					}
					cancel()
					// An early abort may surface as the request body's pipe closed by the
					// cancellation, the client's own doing, rather than as the context's error.
					if strings.Contains(err.Error(), "context canceled") || strings.HasSuffix(kind, "early") && (errors.Is(err, io.ErrClosedPipe) || strings.Contains(err.Error(), io.ErrClosedPipe.Error())) {
						ok.Add(1)
					} else if strings.Contains(err.Error(), "ENHANCE_YOUR_CALM") {
						calm.Add(1)
					} else {
						other.Add(1)
						if other.Load() < 3 {
							t.Logf("err: %v", err)
						}
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: ok %d, calm %d, other %d", kind, ok.Load(), calm.Load(), other.Load())
		if calm.Load() != 0 || other.Load() != 0 || ok.Load() != 32*100 {
			t.Errorf("%s: %d sessions aborted cleanly, %d connection closes (ENHANCE_YOUR_CALM), %d other errors; want all 3200 clean", kind, ok.Load(), calm.Load(), other.Load())
		}
	}
}
