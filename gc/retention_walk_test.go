package gc

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
	"github.com/sluice-dev/sluice/stream"
)

// segCountStore counts Gets of segment objects and, when onSegGet is set, calls it after
// each one (to stand for a producer committing while the collector reads segments).
type segCountStore struct {
	objectstore.Store
	segGets  atomic.Int64
	mu       sync.Mutex
	onSegGet func(n int64)
}

func (s *segCountStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	obj, err := s.Store.Get(ctx, key, opts)
	if strings.HasPrefix(key, stream.SegmentPrefix(mpath)) {
		n := s.segGets.Add(1)
		s.mu.Lock()
		f := s.onSegGet
		s.mu.Unlock()
		if f != nil {
			f(n)
		}
	}
	return obj, err
}

var commitBatchNum atomic.Uint64

// commitArrivals commits one batch of one record per arrival time, as a producer would.
func commitArrivals(t testing.TB, store objectstore.Store, arrivals []uint64) {
	t.Helper()
	_, err := manifest.Open(store, mpath).Update(context.Background(), func(s *manifest.State) error {
		for _, a := range arrivals {
			n := commitBatchNum.Add(1)
			b := &manifest.Batch{Key: fmt.Sprintf("%s/rev-%d", dpre, n), ObjectBytes: 1, ProducerID: "p", BatchNum: n,
				ArrivalMs: a, Appends: []*batchfmt.AppendInput{{Records: []batchfmt.Record{{Body: []byte("x")}}}}}
			if _, err := s.Apply(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bigSegmentStream makes a stream with a level-1 segment (8192 entries, entry i arriving at t0+i s) kept because
// its newest entries are young, retention 100 s.
func bigSegmentStream(t *testing.T, store objectstore.Store) {
	t.Helper()
	cfg := manifest.DefaultConfig()
	cfg.Retention = manifest.Retention{AgeSecs: 100}
	if _, err := manifest.Open(store, mpath).Create(context.Background(), cfg, t0); err != nil {
		t.Fatal(err)
	}
	const n = 34*manifest.SealEntries + 1
	arr := make([]uint64, n)
	for i := range arr {
		arr[i] = uint64(t0.Add(time.Duration(i) * time.Second).UnixMilli())
	}
	commitArrivals(t, store, arr)
	st := load(t, store)
	if len(st.Segments) != 2 || st.Segments[0].Level != 1 {
		t.Fatalf("setup: %+v", st.Segments)
	}
}

// Segment objects read per pass: retention's walk into the oldest segment kept reads the run
// past the age once; later passes start at the raised trim point and read only the segments
// that hold it, one per level (the collector's references come from its own cache).
func TestRetentionSegmentReadsPerPass(t *testing.T) {
	ctx := context.Background()
	rs := &segCountStore{Store: objectstore.NewMemStore()}
	bigSegmentStream(t, rs)
	now := t0.Add(5100500 * time.Millisecond)
	c, err := NewCollector(rs, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		before := rs.segGets.Load()
		rep, err := c.Pass(ctx, ingest)
		if err != nil {
			t.Fatal(err)
		}
		reads := rs.segGets.Load() - before
		t.Logf("pass %d: segment objects read %d, trim raised to %d", i, reads, rep.TrimRaisedTo)
		if i == 0 && (reads == 0 || rep.TrimRaisedTo != 5001) {
			t.Fatalf("first pass: %d segment reads, trim raised to %d; want some and 5001", reads, rep.TrimRaisedTo)
		}
		if i > 0 && (reads > 2 || rep.TrimRaisedTo != 0) {
			t.Fatalf("pass %d: %d segment reads, trim raised to %d; want at most 2 (a level-1 segment and the level-0 one holding the trim point) and 0", i, reads, rep.TrimRaisedTo)
		}
	}
}

// Liveness: producers committing while retention reads segments (here one commit per 5
// segment reads) must not starve the pass. The walk runs before the manifest update, once;
// when it ran inside the update (5ef7e57), every attempt re-read the segments, conflicted,
// and the pass gave up after 50 attempts, so retention dropped nothing and nothing was
// deleted.
func TestRetentionWalkSurvivesCommits(t *testing.T) {
	ctx := context.Background()
	rs := &segCountStore{Store: objectstore.NewMemStore()}
	bigSegmentStream(t, rs)
	now := t0.Add(5100500 * time.Millisecond)
	var commits atomic.Int64
	rs.onSegGet = func(n int64) {
		if n%5 == 0 {
			commits.Add(1)
			commitArrivals(t, rs.Store, []uint64{uint64(now.UnixMilli())}) // a producer's commit, arrival now
		}
	}
	cfg := testConfig(func() time.Time { return now })
	cfg.Backoff = manifest.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Multiplier: 2}
	c, err := NewCollector(rs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := rs.segGets.Load()
	rep, err := c.Pass(ctx, ingest)
	t.Logf("pass: err=%v trim_raised_to=%d entries_dropped=%d; segment reads %d, concurrent commits %d",
		err, rep.TrimRaisedTo, rep.EntriesDropped, rs.segGets.Load()-before, commits.Load())
	if err != nil {
		t.Fatalf("gc pass failed while producers commit: %v", err)
	}
	if rep.TrimRaisedTo != 5001 {
		t.Fatalf("trim raised to %d, want 5001", rep.TrimRaisedTo)
	}
}
