package producer

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// A store that refuses every upload (a deleted bucket) fails the appends after
// DeliveryTimeout, each naming the cause; their buffer space is freed, nothing of them is in
// the stream, and appends after the store heals commit from seq_num 0.
func TestDeliveryTimeoutFailsRefusedUploads(t *testing.T) {
	mem := newStreamStore(t)
	s := &refuseStore{Store: mem, kind: objectstore.ErrNoBucket, n: 1 << 30}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend // a batch per append
	cfg.MaxBufferedInputs = 3
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	var tickets []*Ticket
	for _, body := range []string{"lost-1", "lost-2", "lost-3"} {
		tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs(body)})
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	for i, tk := range tickets {
		_, err := tk.Result()
		if !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, objectstore.ErrNoBucket) {
			t.Fatalf("append %d: %v, want ErrDeliveryTimeout wrapping ErrNoBucket", i, err)
		}
		t.Logf("append %d: %v", i, err)
	}
	if _, err := tickets[0].Result(); !strings.Contains(err.Error(), "not stored within 50ms") {
		t.Errorf("first append: %v, want the batch that timed out named", err)
	}

	// The store heals: the buffer has room again (three more appends, with a bound on the
	// wait in case it had not), and the stream holds only what is appended now.
	s.heal()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var acked []ackedAppend
	for _, body := range []string{"kept-1", "kept-2", "kept-3"} {
		ack, err := p.AppendSync(wctx, batchfmt.AppendInput{Records: bodyRecs(body)})
		if err != nil {
			t.Fatalf("append after the store healed: %v", err)
		}
		acked = append(acked, ackedAppend{bodies: []string{body}, ack: ack})
	}
	if acked[0].ack.Start.SeqNum != 0 {
		t.Errorf("first append after the store healed starts at %d, want 0", acked[0].ack.Start.SeqNum)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _ := readStream(t, mem, "ingest/manifest")
	verify(t, recs, acked, [][]string{{"lost-1"}, {"lost-2"}, {"lost-3"}}, map[string]bool{"kept-1": true, "kept-2": true, "kept-3": true})
	if len(recs) != 3 {
		t.Fatalf("stream holds %d records, want 3", len(recs))
	}
}

// Uploads that never return (a hung store) cannot fail the appends themselves: the
// expiry timer does. The hung upload's object, stored once the store recovers, is not
// in the stream.
func TestDeliveryTimeoutHungUpload(t *testing.T) {
	mem := newStreamStore(t)
	g := &gateStore{Store: mem, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	cfg := testConfig(g)
	cfg.FlushInterval = FlushEveryAppend
	cfg.UploadConcurrency = 1
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("hung")})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	_, err = tk.Result()
	if !errors.Is(err, ErrDeliveryTimeout) || !strings.Contains(err.Error(), "no store request finished") {
		t.Fatalf("append whose upload hangs: %v, want ErrDeliveryTimeout with no store error", err)
	}
	close(g.gate) // the hung upload completes: its object is stored, and referenced by nothing
	ack, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("after")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _ := readStream(t, mem, "ingest/manifest")
	verify(t, recs, []ackedAppend{{bodies: []string{"after"}, ack: ack}}, [][]string{{"hung"}}, map[string]bool{"after": true})
	if len(recs) != 1 {
		t.Fatalf("stream holds %d records, want 1", len(recs))
	}
}

// heldStore holds the first manifest write it is asked for after hold is set until release
// is closed, then fails it with an unknown outcome; and refuses batch uploads while refuse
// is set.
type heldStore struct {
	objectstore.Store
	mu      sync.Mutex
	hold    bool
	refuse  bool
	entered chan struct{}
	release chan struct{}
}

func (s *heldStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.mu.Lock()
	hold := s.hold && key == "ingest/manifest"
	if hold {
		s.hold = false
	}
	refuse := s.refuse && key != "ingest/manifest"
	s.mu.Unlock()
	if hold {
		close(s.entered)
		<-s.release
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, errors.New("connection reset"))
	}
	if refuse {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrAccessDenied, nil)
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// A batch a manifest write holds is not failed by DeliveryTimeout, while the batches after it
// are. Flush waits for the held one all the same, and when the held write is retried after
// the later batch failed, the earlier batch's chained append still commits: the chain failed
// after it, not before.
func TestDeliveryTimeoutSparesHeldBatches(t *testing.T) {
	mem := newStreamStore(t)
	s := &heldStore{Store: mem, entered: make(chan struct{}), release: make(chan struct{})}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()
	var chain Chain

	s.mu.Lock()
	s.hold = true
	s.mu.Unlock()
	held, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("held")}, WithChain(&chain))
	if err != nil {
		t.Fatal(err)
	}
	<-s.entered // batch 1 is uploaded, and its manifest write is in flight
	s.mu.Lock()
	s.refuse = true
	s.mu.Unlock()
	later, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("later")}, WithChain(&chain))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := later.Result(); !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, objectstore.ErrAccessDenied) {
		t.Fatalf("later batch: %v, want ErrDeliveryTimeout wrapping ErrAccessDenied", err)
	}
	select {
	case <-held.Done():
		r, err := held.Result()
		t.Fatalf("the held batch resolved while its manifest write was held: %v %v", r, err)
	default:
	}

	flushed := make(chan error, 1)
	go func() { flushed <- p.Flush(ctx) }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned (%v) while batch 1 was still pending", err)
	case <-time.After(100 * time.Millisecond):
	}
	s.mu.Lock()
	s.refuse = false
	s.mu.Unlock()
	close(s.release) // the held write fails with an unknown outcome; the commit loop retries it
	if err := <-flushed; err != nil {
		t.Fatalf("Flush: %v", err)
	}
	ack, err := held.Result()
	if err != nil {
		t.Fatalf("held batch: %v, want it committed", err)
	}
	if !chain.Failed() {
		t.Error("the chain does not show the later append's failure")
	}
	if _, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("after")}, WithChain(&chain)); !errors.Is(err, manifest.ErrPrecedingAppendFailed) {
		t.Errorf("chained append after the failure: %v, want ErrPrecedingAppendFailed", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _ := readStream(t, mem, "ingest/manifest")
	verify(t, recs, []ackedAppend{{bodies: []string{"held"}, ack: ack}}, [][]string{{"later"}, {"after"}}, map[string]bool{"held": true})
}

func TestDeliveryTimeoutValidation(t *testing.T) {
	cfg := testConfig(objectstore.NewMemStore())
	cfg.DeliveryTimeout = -time.Second
	err := cfg.Validate()
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "delivery timeout -1s must not be negative") {
		t.Fatalf("negative delivery timeout: %v", err)
	}
}

// hangGetStore is a store whose gets never answer until their context ends.
type hangGetStore struct{ objectstore.Store }

func (s hangGetStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	<-ctx.Done()
	return nil, objectstore.NewOpError("get", key, nil, ctx.Err())
}

// Opening a stream on a store that does not answer ends with ErrDeliveryTimeout once
// DeliveryTimeout passes (its retried manifest reads, each waiting on the store, could
// otherwise take hours), with and without CreateStream; without the bound, New waits for
// its context.
func TestDeliveryTimeoutBoundsTheOpen(t *testing.T) {
	for _, create := range []bool{false, true} {
		cfg := testConfig(hangGetStore{newStreamStore(t)})
		cfg.CreateStream = create
		cfg.DeliveryTimeout = 100 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		p, err := New(ctx, cfg)
		cancel()
		if err == nil {
			p.Close(context.Background())
			t.Fatalf("create %v: the stream opened on a store that never answers", create)
		}
		if !errors.Is(err, ErrDeliveryTimeout) || time.Since(start) > 10*time.Second {
			t.Fatalf("create %v: New after %v: %v, want ErrDeliveryTimeout after about 100 ms", create, time.Since(start), err)
		}
		t.Logf("create %v: %v", create, err)
	}
	cfg := testConfig(hangGetStore{newStreamStore(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := New(ctx, cfg); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("without a delivery timeout: %v, want the context's error", err)
	}
}
