package consumer

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// stallingStore holds every Get of a batch object until its context ends, telling started of
// each.
type stallingStore struct {
	objectstore.Store
	started chan struct{}
}

func (s *stallingStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if strings.HasSuffix(key, "manifest") {
		return s.Store.Get(ctx, key, opts)
	}
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, objectstore.NewOpError("get", key, nil, ctx.Err())
}

// TestCancelledFetchIsNotAFetchError: a read-ahead fetch that a closing session cancels is
// not the store's failure, so object_fetch_errors_total does not count it (a soak showed
// thousands of kind="other" errors on a healthy store, from reads that ended).
func TestCancelledFetchIsNotAFetchError(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	f := newFixture(t, mem, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rand.New(rand.NewPCG(seed(t), 3)), 2)
	st := &stallingStore{Store: mem, started: make(chan struct{}, 1)}
	reg := prometheus.NewRegistry()
	f.store = st
	r := f.reader(func(c *Config) { c.Registerer = reg })
	s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0), Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := s.Read(ctx, 10, 1<<20, false); read <- err }()
	<-st.started // a fetch is in flight
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-read // whatever it says: the session is closed
	var m dto.Metric
	if err := r.m.fetchErrors.WithLabelValues("other").Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 0 {
		t.Fatalf("a cancelled fetch was counted as a fetch error: %v", n)
	}
}

// flakyStore fails the first Get of the object at key with a plain error.
type flakyStore struct {
	objectstore.Store
	key    string
	failed atomic.Bool
}

func (s *flakyStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if key == s.key && s.failed.CompareAndSwap(false, true) {
		return nil, objectstore.NewOpError("get", key, nil, errors.New("connection reset"))
	}
	return s.Store.Get(ctx, key, opts)
}

// TestRealFetchFailureStillCounted: a store failure in a live session is still counted (kind
// "other") and retried: only a fetch whose read ended is left uncounted.
func TestRealFetchFailureStillCounted(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	f := newFixture(t, mem, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rand.New(rand.NewPCG(seed(t), 3)), 2)
	snap, err := manifest.Open(mem, f.path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	// The first object's fetch fails once. The read below needs that object's records, so
	// it returns only after the failure and the retry (a later object's fetch might not
	// have started yet).
	f.store = &flakyStore{Store: mem, key: snap.State.Entries[0].Key}
	r := f.reader(func(c *Config) { c.Registerer = reg })
	s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.Read(ctx, 10, 1<<20, false)
	if err != nil || len(b.Records) == 0 {
		t.Fatalf("read: %d records, %v", len(b.Records), err)
	}
	var m dto.Metric
	if err := r.m.fetchErrors.WithLabelValues("other").Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 1 {
		t.Fatalf("object_fetch_errors_total{kind=other} = %v, want 1", n)
	}
}

// TestNextNeverReturnsRecordsWithAnError: records read before a corrupt object come without
// the error, and the error with the next call, so a caller that drops a failed batch (and a
// group member that later acks through a newer seq_num) never skips records it was not shown.
func TestNextNeverReturnsRecordsWithAnError(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 9))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 6)
	snap, err := manifest.Open(store, f.path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := snap.State.Entries[3]
	data, _, err := objectstore.ReadAll(ctx, store, victim.Key)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if _, err := objectstore.PutBytes(ctx, store, victim.Key, data, objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	// One big batch per call, with every object fetched ahead: the first call reaches the
	// corrupt object with records of the earlier ones in hand.
	r := f.reader(func(c *Config) {
		c.FetchAttempts = 1
		c.ReadAheadDepth = 8
		c.MaxBatchRecords = 100000
		c.MaxBatchBytes = 1 << 30
	})
	s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []SequencedRecord
	for {
		b, err := s.Next(ctx)
		if err != nil {
			if len(b.Records) > 0 {
				t.Fatalf("Next returned %d records together with %v", len(b.Records), err)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("want the corruption, got %v", err)
			}
			break
		}
		got = append(got, b.Records...)
	}
	check(t, "before corruption", got, f.want[:victim.FirstSeq])
}
