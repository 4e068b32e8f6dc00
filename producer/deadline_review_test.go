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
// then, not wait for further traffic (without it, the append waited as long as the writes
// were refused, and committed far past its deadline once one succeeded: found by review).
// Both the plain bound and one shortened by a wait before acceptance are checked.
func TestExpiryWokenWhenAWriteFailsWithoutEffect(t *testing.T) {
	for _, mode := range []string{"flush", "since"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := newStreamStore(t)
				s := &slowRefuseStore{Store: mem, writeTime: 200 * time.Millisecond}
				cfg := testConfig(s)
				cfg.FlushInterval = 0
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
				tk, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("x")}, nil, since)
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
		tk, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("x")}, nil, start.Add(-time.Second))
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
		s.mu.Lock()
		s.n = 0
		s.mu.Unlock()
		closeProducer(t, p)
	})
}

// A FlushInterval at or over the delivery timeout (serve --flush-interval 5s, which serve
// accepts) does not fail appends on a healthy store: the time in the open batch does not
// count (a first design that ran the bound from the arrival through the open batch failed
// every such append at its flush: found by review).
func TestAppendSinceLongFlushIntervalHealthyStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		cfg := testConfig(mem)
		cfg.FlushInterval = 5 * time.Second
		cfg.DeliveryTimeout = 4 * time.Second
		p := newProducer(t, cfg)
		ctx := context.Background()

		tk, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("x")}, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Result(); err != nil {
			t.Errorf("append on a healthy store, flush interval 5s, delivery timeout 4s: %v", err)
		}
		closeProducer(t, p)
	})
}

// AppendChainedSince's wait for the chain's last append on another producer (the chain
// moving to a fresh producer) ends with the append's delivery timeout: while that append is
// held by manifest writes with unknown outcomes (which the timeout never fails), the new
// append is refused with ErrDeliveryTimeout when its time runs out (nothing of it was handed
// over), not left waiting (found by review).
func TestAppendSinceChainMoveWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &stallStore{Store: mem, entered: make(chan string, 64), release: make(chan struct{}), failKind: objectstore.ErrOutcomeUnknown}
		cfg := testConfig(s)
		cfg.FlushInterval = 0
		cfg.DeliveryTimeout = time.Hour
		p1 := newProducer(t, cfg)
		p2 := newProducer(t, cfg)
		ctx := context.Background()
		var chain Chain

		s.set(func(s *stallStore) { s.failManifest = true })
		first, err := p1.AppendChained(ctx, batchfmt.AppendInput{Records: bodyRecs("first")}, &chain)
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
			tk, err := p2.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("second")}, &chain, start.Add(100*time.Millisecond-30*time.Minute))
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
// take 20ms: both commit. (A first design accepted appends with any time left, down to a
// few ms, and failed them with their batchmates and every append after: found by review.
// Now an append must be accepted within half the timeout, so a batch has at least that.)
func TestAppendSinceHalfWaitedSharesItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		cfg := testConfig(&latencyStore{Store: mem, d: 20 * time.Millisecond})
		cfg.FlushInterval = 10 * time.Millisecond // the engine's
		cfg.DeliveryTimeout = 4 * time.Second
		p := newProducer(t, cfg)
		ctx := context.Background()

		late, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("late")}, nil, time.Now().Add(-cfg.DeliveryTimeout/2))
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("fresh")}, nil, time.Now())
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
