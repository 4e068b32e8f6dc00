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

// A record Submit accepted after append A1, whose client-side batch the linger loop hands to
// append while the buffer is full, waits in append for buffer space, which the expiry that
// fails A1 (and A2) frees; it fails too, rather than commit after an append accepted before
// it failed.
func TestDeliveryTimeoutSubmitWaitingForRoom(t *testing.T) {
	s := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrAccessDenied, n: 1 << 30}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.MaxBufferedInputs = 2
	cfg.Batching.Linger = 10 * time.Millisecond
	cfg.DeliveryTimeout = 300 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	a1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("A1")})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := p.Submit(ctx, batchfmt.Record{Body: []byte("r1, submitted after A1")})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("A2")}) // fills the buffer
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the linger loop is now blocked in acquire, holding r1
	waitFailed(t, a1, "A1")
	waitFailed(t, a2, "A2")
	s.heal() // the store heals
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ra, err := r1.Wait(wctx)
	closeProducer(t, p)
	if err == nil {
		recs, _ := readStream(t, s.Store, "ingest/manifest")
		t.Fatalf("r1, submitted after A1, committed at seq_num %d (stream %+v) after A1 failed with ErrDeliveryTimeout", ra.SeqNum, recs)
	}
	if !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("r1: %v, want ErrDeliveryTimeout", err)
	}
}

// A Submit held back by a full buffer until the expiry of A1 frees it is accepted after A1
// failed, so it commits once the store heals.
func TestDeliveryTimeoutSubmitAcceptedAfterExpiry(t *testing.T) {
	s := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrAccessDenied, n: 1 << 30}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.MaxBufferedInputs = 1
	cfg.Batching.Linger = time.Hour
	cfg.DeliveryTimeout = 100 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	a1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("A1")})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := p.Submit(ctx, batchfmt.Record{Body: []byte("r1")}) // blocks until A1 expires
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-a1.Done():
	default:
		t.Fatal("Submit returned before A1 failed: the test did not block it")
	}
	s.heal()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Wait(ctx); err != nil {
		t.Errorf("r1, whose Submit returned after A1 failed, with the store healed: %v", err)
	}
	closeProducer(t, p)
}

// stallStore: with hangManifest / hangData set, manifest / batch puts block
// until release is closed (or ctx ends); with failManifest set, manifest puts fail at once
// with failKind (ErrAccessDenied: nothing written; ErrOutcomeUnknown: maybe written). Each
// put it hangs or fails is announced on entered, without blocking.
type stallStore struct {
	objectstore.Store
	mu                                   sync.Mutex
	hangManifest, hangData, failManifest bool
	failKind                             error
	entered                              chan string
	release                              chan struct{}
}

func (s *stallStore) set(f func(*stallStore)) { s.mu.Lock(); f(s); s.mu.Unlock() }

func (s *stallStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	isManifest := key == "ingest/manifest"
	s.mu.Lock()
	hang := (isManifest && s.hangManifest) || (!isManifest && s.hangData)
	fail := isManifest && s.failManifest
	s.mu.Unlock()
	if fail || hang {
		select {
		case s.entered <- key:
		default:
		}
	}
	if fail {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, s.failKind, errors.New("503 SlowDown"))
	}
	if hang {
		select {
		case <-s.release:
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, errors.New("connection reset"))
		case <-ctx.Done():
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, ctx.Err())
		}
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

func waitEntered(t *testing.T, ch chan string, manifest bool) {
	t.Helper()
	select {
	case k := <-ch:
		if (k == "ingest/manifest") != manifest {
			t.Fatalf("put of %s reached the store first, want manifest=%v", k, manifest)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no put (manifest=%v) reached the store", manifest)
	}
}

// waitFailed waits for tk to fail with ErrDeliveryTimeout, with a bound that only keeps a
// broken producer from hanging the test.
func waitFailed(t *testing.T, tk *Ticket, what string) error {
	t.Helper()
	select {
	case <-tk.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not failed 10 s after its flush", what)
	}
	_, err := tk.Result()
	if !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("%s: %v, want ErrDeliveryTimeout", what, err)
	}
	t.Logf("%s: %v", what, err)
	return err
}

// The store stops answering while a manifest write is in flight, as it will under steady
// traffic: the commit loop waits in that write, and the later batch, whose upload hangs too,
// still fails.
func TestDeliveryTimeoutBehindHungManifestWrite(t *testing.T) {
	s := &stallStore{Store: newStreamStore(t), entered: make(chan string, 4), release: make(chan struct{})}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	s.set(func(s *stallStore) { s.hangManifest = true })
	held, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("held")})
	if err != nil {
		t.Fatal(err)
	}
	waitEntered(t, s.entered, true)
	s.set(func(s *stallStore) { s.hangData = true })
	later, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("later")})
	if err != nil {
		t.Fatal(err)
	}
	waitEntered(t, s.entered, false)
	waitFailed(t, later, "later batch")
	select {
	case <-held.Done():
		t.Fatal("the batch held by a manifest write resolved while the write hangs")
	default:
	}
	s.set(func(s *stallStore) { s.hangManifest, s.hangData = false, false })
	close(s.release)
	if _, err := held.Result(); err != nil {
		t.Fatalf("held batch, once the store answers again: %v", err)
	}
	closeProducer(t, p)
}

// Manifest writes keep failing with an unknown outcome while uploads succeed: the commit loop
// retries the first batch's write, which may have committed it, so the first batch is not
// failed; the later batch, stored but held by no write, fails, naming the manifest's error
// (as text: it does not match ErrOutcomeUnknown); its buffer space is freed; and once writes
// succeed the first batch commits.
func TestDeliveryTimeoutBehindRetriedWrite(t *testing.T) {
	s := &stallStore{Store: newStreamStore(t), entered: make(chan string, 4), release: make(chan struct{}), failKind: objectstore.ErrOutcomeUnknown}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.MaxBufferedInputs = 2
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	s.set(func(s *stallStore) { s.failManifest = true })
	held, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("held")})
	if err != nil {
		t.Fatal(err)
	}
	waitEntered(t, s.entered, true) // batch 1 is held by a (failing) write
	later, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("later")})
	if err != nil {
		t.Fatal(err)
	}
	err = waitFailed(t, later, "later batch")
	if want := "stored but not committed"; !contains(err, want) || !contains(err, "503 SlowDown") {
		t.Errorf("later batch: %v, want %q and the manifest's error", err, want)
	}
	if errors.Is(err, objectstore.ErrOutcomeUnknown) || errors.Is(err, manifest.ErrOutcomeUnknown) {
		t.Errorf("later batch: %v matches ErrOutcomeUnknown, though it is certainly not in the stream", err)
	}
	// Its buffer slot is free again: one more append fits beside the held one.
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := p.Append(actx, batchfmt.AppendInput{Records: bodyRecs("room")}); err != nil {
		t.Fatalf("append after the later batch failed: %v", err)
	}
	select {
	case <-held.Done():
		_, err := held.Result()
		t.Fatalf("the batch an unknown-outcome write holds resolved while writes fail: %v", err)
	default:
	}
	s.set(func(s *stallStore) { s.failManifest = false })
	if _, err := held.Result(); err != nil {
		t.Fatalf("held batch, once manifest writes succeed: %v", err)
	}
	closeProducer(t, p)
}

// Manifest writes refused (revoked permissions) while uploads succeed: the writes had no
// effect, so the batch they held fails with the delivery timeout as well as the one after it,
// naming the refusal; after the store heals, appends commit from seq_num 0.
func TestDeliveryTimeoutFailsRefusedManifestWrites(t *testing.T) {
	mem := newStreamStore(t)
	s := &stallStore{Store: mem, entered: make(chan string, 4), release: make(chan struct{}), failKind: objectstore.ErrAccessDenied}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	s.set(func(s *stallStore) { s.failManifest = true })
	first, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")})
	if err != nil {
		t.Fatal(err)
	}
	waitEntered(t, s.entered, true)
	second, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("second")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range []*Ticket{first, second} {
		if err := waitFailed(t, tk, "append"); !errors.Is(err, objectstore.ErrAccessDenied) {
			t.Errorf("append: %v, want it to wrap ErrAccessDenied", err)
		}
	}
	s.set(func(s *stallStore) { s.failManifest = false })
	ack, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("third")})
	if err != nil || ack.Start.SeqNum != 0 {
		t.Fatalf("append after the store healed: %+v %v, want seq_num 0", ack, err)
	}
	closeProducer(t, p)
	recs, _ := readStream(t, mem, "ingest/manifest")
	verify(t, recs, []ackedAppend{{bodies: []string{"third"}, ack: ack}}, [][]string{{"first"}, {"second"}}, map[string]bool{"third": true})
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// An append accepted into the open batch before an earlier batch times out fails with it,
// so that a caller resending the earlier one never sees the later one committed first.
func TestDeliveryTimeoutFailsTheOpenBatch(t *testing.T) {
	s := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrAccessDenied, n: 1 << 30}
	cfg := testConfig(s)
	cfg.FlushInterval = time.Hour // batches seal on Flush only
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	first, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.sealLocked() // batch 1 goes to upload, which is refused
	p.mu.Unlock()
	second, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("second")}) // batch 2, open
	if err != nil {
		t.Fatal(err)
	}
	waitFailed(t, first, "first append")
	waitFailed(t, second, "second append, open when the first failed")
	s.heal()
	third, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("third")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ack, err := third.Result()
	if err != nil || ack.Start.SeqNum != 0 {
		t.Fatalf("append after the store healed: %+v %v, want seq_num 0", ack, err)
	}
	closeProducer(t, p)
}

// Records Submit holds in its client-side batch when an earlier append fails with the
// delivery timeout fail with it; records submitted afterwards commit.
func TestDeliveryTimeoutFailsSubmittedRecords(t *testing.T) {
	s := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrNoBucket, n: 1 << 30}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.Batching.Linger = time.Hour // submitted records wait for Flush
	cfg.DeliveryTimeout = 50 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	first, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("appended")})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := p.Submit(ctx, batchfmt.Record{Body: []byte("submitted before")})
	if err != nil {
		t.Fatal(err)
	}
	waitFailed(t, first, "append")
	s.heal()
	after, err := p.Submit(ctx, batchfmt.Record{Body: []byte("submitted after")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := waiting.Wait(ctx); !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("record submitted before the failure: %v, want ErrDeliveryTimeout", err)
	}
	ra, err := after.Wait(ctx)
	if err != nil || ra.SeqNum != 0 {
		t.Fatalf("record submitted after the failure: %+v %v, want seq_num 0", ra, err)
	}
	closeProducer(t, p)
	recs, _ := readStream(t, s.Store, "ingest/manifest")
	if len(recs) != 1 || recs[0].Body != "submitted after" {
		t.Fatalf("stream: %+v, want only the record submitted after the failure", recs)
	}
}
