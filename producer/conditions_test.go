package producer

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

func u64(v uint64) *uint64 { return &v }
func str(v string) *string { return &v }

func bodyRecs(bodies ...string) []batchfmt.Record {
	out := make([]batchfmt.Record, len(bodies))
	for i, b := range bodies {
		out[i].Body = []byte(b)
	}
	return out
}

func closeProducer(t *testing.T, p *Producer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// The seeds' scenarios: match_seq_num auto-increments across batches; a stale one fails
// carrying the expected seq_num; a fencing-token mismatch carries the actual token.
func TestMatchSeqNumAndFencing(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	p := newProducer(t, testConfig(store))
	defer closeProducer(t, p)

	next := uint64(0)
	for i, n := range []int{3, 1, 4} {
		bodies := make([]string, n)
		for j := range bodies {
			bodies[j] = strings.Repeat("x", i+j+1)
		}
		ack, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs(bodies...), MatchSeqNum: u64(next)})
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if ack.Start.SeqNum != next || ack.End.SeqNum != next+uint64(n) || ack.Tail.SeqNum < ack.End.SeqNum {
			t.Fatalf("batch %d: ack %+v", i, ack)
		}
		next = ack.End.SeqNum
	}
	_, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("stale"), MatchSeqNum: u64(2)})
	var mm *manifest.SeqNumMismatchError
	if !errors.As(err, &mm) || mm.Expected != next {
		t.Fatalf("want SeqNumMismatchError{Expected: %d}, got %v", next, err)
	}

	// The batcher's auto-increment, fed through Append.
	b, err := batchfmt.NewBatcher(batchfmt.BatchingConfig{Linger: time.Hour, MaxBatchRecords: 2, MaxBatchBytes: batchfmt.MaxAppendBytes}, batchfmt.WithMatchSeqNum(next))
	if err != nil {
		t.Fatal(err)
	}
	var tickets []*Ticket
	for _, body := range []string{"b1", "b2", "b3", "b4", "b5"} {
		ins, err := b.Add(batchfmt.Record{Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			tk, err := p.Append(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			tickets = append(tickets, tk)
		}
	}
	if in, ok := b.Flush(); ok {
		tk, _ := p.Append(ctx, in)
		tickets = append(tickets, tk)
	}
	for i, tk := range tickets {
		ack, err := tk.Wait(ctx)
		if err != nil || ack.Start.SeqNum != next+uint64(2*i) {
			t.Fatalf("batcher batch %d: %+v %v", i, ack, err)
		}
	}
	next += 5

	// Fencing: the token starts empty.
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("owner-1")}, FencingToken: str("")}); err != nil {
		t.Fatalf("fence: %v", err)
	}
	_, err = p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("intruder"), FencingToken: str("owner-0")})
	var fm *manifest.FencingTokenMismatchError
	if !errors.As(err, &fm) || fm.Actual != "owner-1" || !errors.Is(err, manifest.ErrConditionFailed) {
		t.Fatalf("want FencingTokenMismatchError{Actual: owner-1}, got %v", err)
	}

	// In one batch object: a fence, then an append with the old token (rejected), then one
	// with the new token (committed right after the fence).
	slow := testConfig(store)
	slow.FlushInterval = time.Hour
	q := newProducer(t, slow)
	t1, _ := q.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("owner-2")}, FencingToken: str("owner-1")})
	t2, _ := q.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("old-token"), FencingToken: str("owner-1")})
	t3, _ := q.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("new-token"), FencingToken: str("owner-2")})
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	a1, err1 := t1.Result()
	_, err2 := t2.Result()
	a3, err3 := t3.Result()
	if err1 != nil || !errors.As(err2, &fm) || fm.Actual != "owner-2" || err3 != nil || a3.Start.SeqNum != a1.End.SeqNum {
		t.Fatalf("same-object fencing: %v / %v / %v %+v %+v", err1, err2, err3, a1, a3)
	}
	closeProducer(t, q)
	recs, _ := readStream(t, store, "ingest/manifest")
	for _, r := range recs {
		if r.Body == "old-token" || r.Body == "stale" || r.Body == "intruder" {
			t.Fatalf("rejected record %q is visible at %d", r.Body, r.Seq)
		}
	}
	if last := recs[len(recs)-1]; last.Body != "new-token" || last.Seq != a3.Start.SeqNum {
		t.Fatalf("last record %+v", last)
	}
}

func TestClientRequireRejectsAtOnce(t *testing.T) {
	cfg := testConfig(objectstore.NewMemStore())
	cfg.StreamConfig.Timestamping.Mode = manifest.ClientRequire
	p := newProducer(t, cfg)
	defer closeProducer(t, p)
	_, err := p.Append(context.Background(), batchfmt.AppendInput{Records: bodyRecs("no-ts")})
	if !errors.Is(err, manifest.ErrTimestampRequired) {
		t.Fatalf("want ErrTimestampRequired, got %v", err)
	}
	if _, err := p.Submit(context.Background(), batchfmt.Record{Body: []byte("no-ts")}); !errors.Is(err, manifest.ErrTimestampRequired) {
		t.Fatalf("Submit: want ErrTimestampRequired, got %v", err)
	}
	ack, err := p.AppendSync(context.Background(), batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("ts"), Timestamp: 1234, HasTimestamp: true}}})
	if err != nil || ack.Start.Timestamp != 1234 {
		t.Fatalf("%+v %v", ack, err)
	}
	// Invalid input is refused before anything is buffered.
	if _, err := p.Append(context.Background(), batchfmt.AppendInput{}); !errors.Is(err, batchfmt.ErrInvalid) {
		t.Fatalf("want batchfmt.ErrInvalid, got %v", err)
	}
}

// gateStore blocks puts under the data prefix until the gate opens.
type gateStore struct {
	objectstore.Store
	gate    chan struct{}
	blocked atomic.Int64
	entered chan struct{} // if not nil, signalled (without blocking) as a put reaches the gate
}

func (g *gateStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasPrefix(key, "ingest/0") {
		g.blocked.Add(1)
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, ctx.Err())
		}
	}
	return g.Store.Put(ctx, key, body, size, cond)
}

func TestBackpressureHonoursContext(t *testing.T) {
	g := &gateStore{Store: objectstore.NewMemStore(), gate: make(chan struct{})}
	cfg := testConfig(g)
	cfg.MaxBufferedInputs = 2
	p := newProducer(t, cfg)
	ctx := context.Background()
	t1, err1 := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("a")})
	t2, err2 := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("b")})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := p.Append(short, batchfmt.AppendInput{Records: bodyRecs("c")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the append to block until its ctx ends, got %v", err)
	}
	// Bytes count too: with room for one 1 MiB append, a second waits.
	close(g.gate)
	for _, tk := range []*Ticket{t1, t2} {
		if _, err := tk.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	closeProducer(t, p)

	g2 := &gateStore{Store: objectstore.NewMemStore(), gate: make(chan struct{})}
	cfg = testConfig(g2)
	cfg.MaxInFlightBytes = batchfmt.MaxAppendBytes
	p = newProducer(t, cfg)
	big := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: make([]byte, batchfmt.MaxAppendBytes-8)}}}
	tk, err := p.Append(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if _, err := p.Append(short2, batchfmt.AppendInput{Records: bodyRecs("small")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the byte budget to block, got %v", err)
	}
	close(g2.gate)
	if _, err := tk.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	closeProducer(t, p)
}

func TestCloseAbortsWhenContextEnds(t *testing.T) {
	g := &gateStore{Store: objectstore.NewMemStore(), gate: make(chan struct{})}
	p := newProducer(t, testConfig(g))
	tk, err := p.Append(context.Background(), batchfmt.AppendInput{Records: bodyRecs("stuck")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want Close to report its ctx, got %v", err)
	}
	if _, err := tk.Result(); !errors.Is(err, ErrAborted) {
		t.Fatalf("want ErrAborted, got %v", err)
	}
	if _, err := p.Append(context.Background(), batchfmt.AppendInput{Records: bodyRecs("late")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
	if _, err := p.Submit(context.Background(), batchfmt.Record{Body: []byte("late")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("want ErrClosed from Submit, got %v", err)
	}
}

// failManifest fails the first n manifest puts (plain errors, nothing written).
type failManifest struct {
	objectstore.Store
	mu    sync.Mutex
	left  int
	keys  map[string]bool
	delay time.Duration // before each injected failure
}

func (f *failManifest) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	f.mu.Lock()
	if strings.HasPrefix(key, "ingest/0") {
		f.keys[key] = true
	}
	fail := key == "ingest/manifest" && cond.IfMatch != "" && f.left > 0
	if fail {
		f.left--
	}
	f.mu.Unlock()
	if fail {
		time.Sleep(f.delay)
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, errInjected)
	}
	return f.Store.Put(ctx, key, body, size, cond)
}

// A batch older than the commit deadline is uploaded again under a new key before the
// manifest write that commits it.
func TestCommitDeadlineReuploads(t *testing.T) {
	mem := objectstore.NewMemStore()
	f := &failManifest{Store: mem, left: 3, keys: map[string]bool{}, delay: 3 * time.Millisecond}
	cfg := testConfig(f)
	cfg.CommitDeadline = time.Millisecond // every retry finds the upload stale (a fresh one is not)
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	p := newProducer(t, cfg)
	ack, err := p.AppendSync(context.Background(), batchfmt.AppendInput{Records: bodyRecs("r0", "r1")})
	if err != nil {
		t.Fatal(err)
	}
	if n := counterValue(p.m.reuploads); n < 3 {
		t.Fatalf("%v re-uploads, want >= 3", n)
	}
	if n := counterValue(p.m.commitErrors.WithLabelValues("other")); n != 3 {
		t.Fatalf("%v commit errors, want 3", n)
	}
	closeProducer(t, p)
	recs, st := readStream(t, mem, "ingest/manifest")
	verify(t, recs, []ackedAppend{{bodies: []string{"r0", "r1"}, ack: ack}}, nil, map[string]bool{"r0": true, "r1": true})
	if len(f.keys) < 4 || !f.keys[st.Entries[0].Key] {
		t.Fatalf("uploaded %d keys; committed %q", len(f.keys), st.Entries[0].Key)
	}
	if fams, err := reg.Gather(); err != nil || len(fams) != 0 {
		t.Fatalf("metrics still registered after Close: %d %v", len(fams), err)
	}
}

// A fixed producer id continues its batch numbers after a restart: nothing is mistaken for
// a duplicate.
func TestRestartWithFixedProducerID(t *testing.T) {
	store := objectstore.NewMemStore()
	cfg := testConfig(store)
	cfg.ProducerID = "ingest-host-1"
	var acked []ackedAppend
	maybe := map[string]bool{}
	for run := range 3 {
		p := newProducer(t, cfg)
		for i := range 3 {
			body := strings.Repeat("r", run*3+i+1)
			maybe[body] = true
			ack, err := p.AppendSync(context.Background(), batchfmt.AppendInput{Records: bodyRecs(body)})
			if err != nil {
				t.Fatal(err)
			}
			acked = append(acked, ackedAppend{bodies: []string{body}, ack: ack})
		}
		closeProducer(t, p)
	}
	recs, _ := readStream(t, store, "ingest/manifest")
	verify(t, recs, acked, nil, maybe)
	if len(recs) != 9 {
		t.Fatalf("%d records, want 9", len(recs))
	}
}

func TestStreamReplacedFailsTickets(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	p := newProducer(t, testConfig(store))
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("a")}); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "ingest/manifest"); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Open(store, "ingest/manifest").Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("b")}); !errors.Is(err, manifest.ErrGenerationChanged) {
		t.Fatalf("want ErrGenerationChanged, got %v", err)
	}
	if _, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("c")}); !errors.Is(err, manifest.ErrGenerationChanged) {
		t.Fatalf("want later appends refused, got %v", err)
	}
	_ = p.Close(ctx)
	recs, _ := readStream(t, store, "ingest/manifest")
	if len(recs) != 0 {
		t.Fatalf("the new stream holds %d records of the old one", len(recs))
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	c := DefaultConfig()
	c.Stream = stream.Stream{}
	c.FlushSizeBytes = 0
	c.MaxBufferedInputs = -1
	c.MaxInFlightBytes = 10
	c.CommitDeadline = 0
	c.Batching.MaxBatchRecords = 0
	err := c.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("want ErrInvalidConfig, got %v", err)
	}
	problems := err.(interface{ Unwrap() []error }).Unwrap()
	// object store, stream, flush size, buffered inputs, in-flight bytes, deadline, batching
	if len(problems) != 7 {
		t.Fatalf("want 7 problems, got %d: %v", len(problems), err)
	}
	c = DefaultConfig()
	c.ObjectStore = objectstore.NewMemStore()
	c.FlushInterval = FlushEveryAppend // legal: every append is its own batch
	if err := c.Validate(); err != nil {
		t.Fatalf("default config with a store: %v", err)
	}
}

// TestConfigZeroValues: a zero FlushInterval is refused (not taken for "flush every
// append"), a bare Config{ObjectStore: s} is refused with a hint to start from
// DefaultConfig, and a nil Logger and Now are legal: a producer opens with them.
func TestConfigZeroValues(t *testing.T) {
	c := DefaultConfig()
	c.ObjectStore = objectstore.NewMemStore()
	c.FlushInterval = 0
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "FlushEveryAppend") {
		t.Fatalf("zero flush interval: %v", err)
	}
	c.FlushInterval = -2 * time.Millisecond
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative flush interval other than FlushEveryAppend: %v", err)
	}
	bare := Config{ObjectStore: objectstore.NewMemStore()}
	if err := bare.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "start from DefaultConfig()") {
		t.Fatalf("bare config: %v", err)
	}
	c = DefaultConfig()
	c.ObjectStore = objectstore.NewMemStore()
	c.Logger, c.Now = nil, nil
	ctx := context.Background()
	p, err := New(ctx, c)
	if err != nil {
		t.Fatalf("nil logger and clock: %v", err)
	}
	tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("a")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func counterValue(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func TestCorruptManifestFailsLoudly(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	p := newProducer(t, testConfig(store))
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, store, "ingest/manifest", []byte("SLMF\x01garbage-garbage"), objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	_, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("b")})
	if !errors.Is(err, manifest.ErrCorrupt) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("want a corruption error (outcome unknown: a write was attempted), got %v", err)
	}
	if err := p.Close(ctx); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("Close: want the fatal corruption error, got %v", err)
	}
}

// TestFlushAndCloseAfterClose: Flush reports no append's outcome (a rejected append leaves it
// nil; the ticket has the error); after Close, Flush returns ErrClosed like Append and
// Submit, and a second Close returns nil.
func TestFlushAndCloseAfterClose(t *testing.T) {
	ctx := context.Background()
	p := newProducer(t, testConfig(objectstore.NewMemStore()))
	tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("stale"), MatchSeqNum: u64(5)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush with a rejected append: %v", err)
	}
	var mm *manifest.SeqNumMismatchError
	if _, err := tk.Wait(ctx); !errors.As(err, &mm) {
		t.Fatalf("ticket: want SeqNumMismatchError, got %v", err)
	}
	closeProducer(t, p)
	if err := p.Flush(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("flush after close: want ErrClosed, got %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
}
