package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

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
