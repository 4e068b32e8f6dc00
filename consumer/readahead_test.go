package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// objectGets counts the Gets of batch objects (every key but the manifest).
type objectGets struct {
	objectstore.Store
	n atomic.Int64
}

func (s *objectGets) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if !strings.HasSuffix(key, "manifest") {
		s.n.Add(1)
	}
	return s.Store.Get(ctx, key, opts)
}

// TestShortReadFetchesWhatItNeeds: a read with a count, and a unary Read (one batch),
// fetch only the objects that can hold the records they want, not the whole read-ahead
// (a soak's random-position reads fetched 1.9 times the bytes they delivered). Ten objects
// of 5 records each.
func TestShortReadFetchesWhatItNeeds(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	f := newFixture(t, mem, manifest.DefaultConfig(), batchfmt.CompressionNone)
	for o := range 10 {
		var recs []batchfmt.Record
		for i := range 5 {
			recs = append(recs, rec(baseTS+uint64(5*o+i), fmt.Sprintf("o%d-r%d", o, i)))
		}
		f.object(recs)
	}
	st := &objectGets{Store: mem}
	f.store = st
	r := f.reader(func(c *Config) { c.MaxBatchRecords = 12 })
	for _, c := range []struct {
		start, count uint64 // count 0: none (a unary Read's batch bound, 12, applies)
		objects      int64
	}{
		{0, 1, 1}, {0, 5, 1}, {0, 6, 2}, {3, 5, 2}, {12, 3, 1}, {0, 0, 3}, {45, 0, 1},
	} {
		st.n.Store(0)
		req := ReadRequest{Start: AtSeqNum(c.start)}
		if c.count > 0 {
			req.Count = &c.count
		}
		b, err := r.Read(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want := c.count
		if want == 0 {
			want = min(12, 50-c.start)
		}
		if uint64(len(b.Records)) != want || b.Records[0].SeqNum != c.start {
			t.Fatalf("read from %d, count %d: %d records from %d", c.start, c.count, len(b.Records), b.Records[0].SeqNum)
		}
		if got := st.n.Load(); got != c.objects {
			t.Errorf("read from %d, count %d: %d object fetches, want %d", c.start, c.count, got, c.objects)
		}
	}
}

// gatedStore holds every Get of a batch object, after the first free ones, until released,
// telling entered of each.
type gatedStore struct {
	objectstore.Store
	mu      sync.Mutex
	free    int
	gate    chan struct{}
	entered chan struct{}
}

func (s *gatedStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if !strings.HasSuffix(key, "manifest") {
		s.mu.Lock()
		gate, entered := s.gate, s.entered
		if s.free > 0 {
			s.free--
			gate = nil
		}
		s.mu.Unlock()
		if gate == nil {
			return s.Store.Get(ctx, key, opts)
		}
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.Get(ctx, key, opts)
}

// inFlightAtOnce runs read and fails t unless, after the first free fetches, want object
// fetches are in flight at once before any of them completes; then it lets every fetch
// through and waits for read.
func (s *gatedStore) inFlightAtOnce(t *testing.T, what string, free, want int, read func() error) {
	t.Helper()
	s.mu.Lock()
	s.free = free
	s.gate, s.entered = make(chan struct{}), make(chan struct{}, 10000)
	gate := s.gate
	s.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- read() }()
	released := false
	release := func() {
		if !released {
			close(gate)
			released = true
		}
	}
	defer release()
	for i := range want {
		select {
		case <-s.entered:
		case <-time.After(10 * time.Second): // only on failure
			release()
			<-errc
			t.Fatalf("%s: %d object fetches in flight at once, want %d", what, i, want)
		}
	}
	release()
	if err := <-errc; err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestReadAheadStaysParallel: bounding a counted or unary read's planning by its budget
// (TestShortReadFetchesWhatItNeeds) keeps the read-ahead in full where it is needed: a long
// unary Read over many small objects, a session without a count, and a counted read that
// skips commands, once its first object showed that seq_nums do not stand for records (they
// are mostly commands, which count toward no limit: planning by seq_nums fetched its objects
// one at a time).
func TestReadAheadStaysParallel(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	f := newFixture(t, mem, manifest.DefaultConfig(), batchfmt.CompressionNone)
	for o := range 40 {
		recs := []batchfmt.Record{rec(baseTS+uint64(o), fmt.Sprintf("o%d", o))}
		for range 20 {
			recs = append(recs, batchfmt.FenceRecord(""))
		}
		f.object(recs)
	}
	st := &gatedStore{Store: mem}
	f.store = st
	r := f.reader(func(c *Config) { c.ReadAheadDepth = 4 })
	st.inFlightAtOnce(t, "unary Read", 0, 4, func() error {
		b, err := r.Read(ctx, ReadRequest{Start: AtSeqNum(0)})
		if err == nil && len(b.Records) != 40*21 {
			err = fmt.Errorf("%d records", len(b.Records))
		}
		return err
	})
	st.inFlightAtOnce(t, "session without a count", 0, 4, func() error {
		got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0)})
		if err == nil && len(got) != 40*21 {
			err = fmt.Errorf("%d records", len(got))
		}
		return err
	})
	st.inFlightAtOnce(t, "counted read skipping commands", 1, 4, func() error {
		got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0), Count: u64(12), SkipCommands: true})
		if err == nil && len(got) != 12 {
			err = fmt.Errorf("%d records", len(got))
		}
		return err
	})
}
