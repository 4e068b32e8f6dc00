package producer

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// An append that waited to be accepted (ReceivedAt) has that much less time after
// its batch's flush, and fails before a batch flushed earlier that did not wait; it fails
// only from its batch on: the earlier batch is left to commit once the store is back, and
// the stream holds it and what came after the failure.
func TestAppendSinceFailsFromItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &refuseStore{Store: mem, kind: objectstore.ErrAccessDenied, n: 1 << 30}
		cfg := testConfig(s)
		cfg.FlushInterval = FlushEveryAppend // a batch per append
		cfg.DeliveryTimeout = 2 * time.Second
		p := newProducer(t, cfg)
		ctx := context.Background()

		early, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("early")})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		since := start.Add(-time.Second) // received half the delivery timeout ago
		late, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("late")}, ReceivedAt(since))
		if err != nil {
			t.Fatal(err)
		}
		_, err = late.Result()
		if !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, objectstore.ErrAccessDenied) {
			t.Fatalf("append with half its delivery timeout left: %v, want ErrDeliveryTimeout wrapping the refusal", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("append failed after %v, want when its delivery timeout ran out, 1s", waited)
		}
		if !strings.Contains(err.Error(), "1s of its flush (1s of the delivery timeout 2s spent before an append of it was accepted)") {
			t.Errorf("error %q does not say how long the batch had", err)
		}
		select {
		case <-early.Done():
			_, err := early.Result()
			t.Fatalf("the earlier append, with another second to go, resolved with the later one's failure: %v", err)
		default:
		}

		s.heal() // the store is back
		earlyAck, err := early.Result()
		if err != nil {
			t.Fatalf("earlier append once the store is back: %v", err)
		}
		after, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("after")})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		recs, _ := readStream(t, mem, "ingest/manifest")
		verify(t, recs, []ackedAppend{{bodies: []string{"early"}, ack: earlyAck}, {bodies: []string{"after"}, ack: after}},
			[][]string{{"late"}}, map[string]bool{"early": true, "after": true})
		if len(recs) != 2 {
			t.Fatalf("stream holds %d records, want 2", len(recs))
		}
	})
}

// An append not accepted within half its delivery timeout, counted from since (it waits
// for buffer space, or that time has passed already), is refused with ErrDeliveryTimeout
// and takes no space; with no DeliveryTimeout, since is ignored.
func TestAppendSinceBeforeAcceptance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &refuseStore{Store: mem, kind: objectstore.ErrAccessDenied, n: 1 << 30}
		cfg := testConfig(s)
		cfg.FlushInterval = FlushEveryAppend
		cfg.MaxBufferedInputs = 1
		cfg.DeliveryTimeout = time.Hour
		p := newProducer(t, cfg)
		ctx := context.Background()

		if _, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("past")}, ReceivedAt(time.Now().Add(-30*time.Minute-time.Millisecond))); !errors.Is(err, ErrDeliveryTimeout) {
			t.Fatalf("append received over half its delivery timeout ago: %v, want ErrDeliveryTimeout at once", err)
		}
		first, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("no-room")}, ReceivedAt(start.Add(50*time.Millisecond-30*time.Minute)))
		if !errors.Is(err, ErrDeliveryTimeout) || !strings.Contains(err.Error(), "no buffer space") {
			t.Fatalf("append waiting for room past its delivery timeout: %v, want ErrDeliveryTimeout naming the wait", err)
		}
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("refused after %v, want when half its delivery timeout ran out, 50ms", waited)
		}
		s.heal()
		firstAck, err := first.Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}

		cfg = testConfig(mem)
		cfg.FlushInterval = FlushEveryAppend
		p = newProducer(t, cfg) // DeliveryTimeout 0
		tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("no-bound")}, ReceivedAt(time.Now().Add(-time.Hour)))
		if err != nil {
			t.Fatalf("append received an hour ago, no DeliveryTimeout: %v, want since ignored", err)
		}
		noBound, err := tk.Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		recs, _ := readStream(t, mem, "ingest/manifest")
		verify(t, recs, []ackedAppend{{bodies: []string{"first"}, ack: firstAck}, {bodies: []string{"no-bound"}, ack: noBound}},
			[][]string{{"past"}, {"no-room"}}, map[string]bool{"first": true, "no-bound": true})
		if len(recs) != 2 {
			t.Fatalf("stream holds %d records, want 2", len(recs))
		}
	})
}

// slowRefuseStore: while refuse is set, every manifest put takes writeTime and
// is then refused with ErrAccessDenied (a known outcome: nothing written), as a store
// that answers slowly with a 403 (or a 412 conflict) does.
type slowRefuseStore struct {
	objectstore.Store
	writeTime time.Duration
	mu        sync.Mutex
	refuse    bool
}

func (s *slowRefuseStore) set(v bool) { s.mu.Lock(); s.refuse = v; s.mu.Unlock() }

func (s *slowRefuseStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.mu.Lock()
	refuse := s.refuse && strings.HasSuffix(key, "/manifest")
	s.mu.Unlock()
	if refuse {
		select {
		case <-time.After(s.writeTime):
		case <-ctx.Done():
		}
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrAccessDenied, nil)
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// The expiry timer is woken when a batch stops being held by a manifest write: the batch's
// deadline passes while a write holds it (expireLocked skips it and, with nothing else
// pending, arms no timer); the write then fails without effect, and the batch must fail
// then, not wait for further traffic.
// Both the plain bound and one shortened by a wait before acceptance are checked.
func TestExpiryWokenWhenAWriteFailsWithoutEffect(t *testing.T) {
	for _, mode := range []string{"flush", "since"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := newStreamStore(t)
				s := &slowRefuseStore{Store: mem, writeTime: 200 * time.Millisecond}
				cfg := testConfig(s)
				cfg.FlushInterval = FlushEveryAppend
				var since time.Time
				if mode == "flush" {
					cfg.DeliveryTimeout = 100 * time.Millisecond
				} else {
					cfg.DeliveryTimeout = 200 * time.Millisecond
					since = time.Now().Add(-100 * time.Millisecond) // 100ms left
				}
				p := newProducer(t, cfg)
				ctx := context.Background()

				s.set(true)
				start := time.Now()
				tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("x")}, ReceivedAt(since))
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Second) // 50 times the bound
				select {
				case <-tk.Done():
					if _, err := tk.Result(); !errors.Is(err, ErrDeliveryTimeout) {
						t.Fatalf("append: %v, want ErrDeliveryTimeout", err)
					}
				default:
					s.set(false) // the store heals
					_, err := tk.Result()
					t.Errorf("append with a 100ms bound still pending 5s later (refused manifest writes of 200ms each); "+
						"once the store healed it resolved %v after it was accepted with err=%v", time.Since(start), err)
				}
				closeProducer(t, p)
			})
		})
	}
}

// The time an append spends in the open batch does not count against its delivery timeout,
// as with Append: an append with half of it (1s) left when accepted, in a batch flushed
// 10s later, fails 1s after the flush, and the error says how the time was spent.
func TestAppendSinceOpenBatchTimeNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrAccessDenied, n: 1 << 30}
		cfg := testConfig(s)
		cfg.FlushInterval = 10 * time.Second
		cfg.DeliveryTimeout = 2 * time.Second
		p := newProducer(t, cfg)
		ctx := context.Background()

		start := time.Now()
		tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("x")}, ReceivedAt(start.Add(-time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		<-tk.Done()
		_, err = tk.Result()
		if !errors.Is(err, ErrDeliveryTimeout) {
			t.Fatalf("append: %v, want ErrDeliveryTimeout", err)
		}
		if took := time.Since(start); took != cfg.FlushInterval+time.Second {
			t.Errorf("append with 1s left failed %v after it was accepted, want 1s after its batch's flush (11s)", took)
		}
		if !strings.Contains(err.Error(), "within 1s of its flush") {
			t.Errorf("error does not say the batch had 1s after its flush: %v", err)
		}
		s.heal()
		closeProducer(t, p)
	})
}

// A FlushInterval at or over the delivery timeout (serve --flush-interval 5s, which serve
// accepts) does not fail appends on a healthy store: the time in the open batch does not
// count.
func TestAppendSinceLongFlushIntervalHealthyStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		cfg := testConfig(mem)
		cfg.FlushInterval = 5 * time.Second
		cfg.DeliveryTimeout = 4 * time.Second
		p := newProducer(t, cfg)
		ctx := context.Background()

		tk, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("x")}, ReceivedAt(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Result(); err != nil {
			t.Errorf("append on a healthy store, flush interval 5s, delivery timeout 4s: %v", err)
		}
		closeProducer(t, p)
	})
}

// Append's wait (WithChain) for the chain's last append on another producer (the chain
// moving to a fresh producer) ends with the append's delivery timeout: while that append is
// held by manifest writes with unknown outcomes (which the timeout never fails), the new
// append is refused with ErrDeliveryTimeout when its time runs out (nothing of it was handed
// over), not left waiting.
func TestAppendSinceChainMoveWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &stallStore{Store: mem, entered: make(chan string, 64), release: make(chan struct{}), failKind: objectstore.ErrOutcomeUnknown}
		cfg := testConfig(s)
		cfg.FlushInterval = FlushEveryAppend
		cfg.DeliveryTimeout = time.Hour
		p1 := newProducer(t, cfg)
		p2 := newProducer(t, cfg)
		ctx := context.Background()
		var chain Chain

		s.set(func(s *stallStore) { s.failManifest = true })
		first, err := p1.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")}, WithChain(&chain))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		type res struct {
			tk  *Ticket
			err error
		}
		done := make(chan res, 1)
		go func() {
			tk, err := p2.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("second")}, WithChain(&chain), ReceivedAt(start.Add(100*time.Millisecond-30*time.Minute)))
			done <- res{tk, err}
		}()
		time.Sleep(2 * time.Second)
		select {
		case r := <-done:
			if !errors.Is(r.err, ErrDeliveryTimeout) {
				t.Errorf("second append: %v, want ErrDeliveryTimeout", r.err)
			}
		default:
			t.Errorf("append with 100ms left to be accepted neither accepted nor refused %v later (waiting for the chain's append on the old producer)", time.Since(start))
			s.set(func(s *stallStore) { s.failManifest = false })
			<-done
		}
		s.set(func(s *stallStore) { s.failManifest = false })
		if _, err := first.Result(); err != nil {
			t.Fatal(err)
		}
		closeProducer(t, p1)
		closeProducer(t, p2)
	})
}

// An append accepted with half of its time left (it waited for the stream's producer to
// open, or for buffer space) shares its batch with a fresh one, on a store whose uploads
// take 20ms: both commit (an append must be accepted within half the timeout, so a batch
// has at least that).
func TestAppendSinceHalfWaitedSharesItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		cfg := testConfig(&latencyStore{Store: mem, d: 20 * time.Millisecond})
		cfg.FlushInterval = 10 * time.Millisecond // the engine's
		cfg.DeliveryTimeout = 4 * time.Second
		p := newProducer(t, cfg)
		ctx := context.Background()

		late, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("late")}, ReceivedAt(time.Now().Add(-cfg.DeliveryTimeout/2)))
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("fresh")}, ReceivedAt(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		_, lerr := late.Result()
		_, ferr := fresh.Result()
		if lerr != nil {
			t.Errorf("append with 2s left, uploads of 20ms: %v", lerr)
		}
		if ferr != nil {
			t.Errorf("fresh append (4s left) on a healthy store: %v", ferr)
		}
		closeProducer(t, p)
	})
}

// latencyStore: every put takes d, as a healthy remote store's do.
type latencyStore struct {
	objectstore.Store
	d time.Duration
}

func (s *latencyStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	time.Sleep(s.d)
	return s.Store.Put(ctx, key, body, size, cond)
}
