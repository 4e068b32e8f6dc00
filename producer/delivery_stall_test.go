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
