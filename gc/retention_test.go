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

// arrivalsStream creates the stream at mpath with retention ret and n entries of one record,
// entry i arriving at base+i s.
func arrivalsStream(t *testing.T, store objectstore.Store, ret manifest.Retention, base time.Time, n int) {
	t.Helper()
	cfg := manifest.DefaultConfig()
	cfg.Retention = ret
	if _, err := manifest.Open(store, mpath).Create(context.Background(), cfg, base); err != nil {
		t.Fatal(err)
	}
	arr := make([]uint64, n)
	for i := range arr {
		arr[i] = uint64(base.Add(time.Duration(i) * time.Second).UnixMilli())
	}
	commitArrivals(t, store, arr)
}

// A stream deleted and re-created under the same path between passes of one collector (Pass,
// then FullPass, then Pass): retention inside its segments works on the new generation.
func TestRetentionRecreatedStream(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	arrivalsStream(t, store, manifest.Retention{AgeSecs: 100}, t0, 34*manifest.SealEntries+1)
	now := t0.Add(5100500 * time.Millisecond)
	c, err := NewCollector(store, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Pass(ctx, ingest)
	t.Logf("gen 1 pass: trim_raised_to=%d err=%v", rep.TrimRaisedTo, err)
	if err != nil || rep.TrimRaisedTo != 5001 {
		t.Fatalf("gen 1: %d %v", rep.TrimRaisedTo, err)
	}
	// Deleted and re-created before the collector sees the gap; arrivals 2000 s later.
	if err := store.Delete(ctx, mpath); err != nil {
		t.Fatal(err)
	}
	arrivalsStream(t, store, manifest.Retention{AgeSecs: 100}, t0.Add(2000*time.Second), 34*manifest.SealEntries+1)
	for i, full := range []bool{true, false} {
		var rep Report
		if full {
			rep, err = c.FullPass(ctx, ingest)
		} else {
			rep, err = c.Pass(ctx, ingest)
		}
		st := load(t, store)
		t.Logf("gen 2 pass %d (full=%v): trim_raised_to=%d trim=%d err=%v", i, full, rep.TrimRaisedTo, st.TrimPoint, err)
		if err != nil {
			t.Fatal(err)
		}
		if st.TrimPoint != 3001 {
			t.Fatalf("gen 2: trim point %d, want 3001", st.TrimPoint)
		}
	}
}

// Retention changed from infinite to an age on a stream that already has segments takes
// effect inside them at the next pass (the help of stream config says so).
func TestRetentionChangeTakesEffectNextPass(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	arrivalsStream(t, store, manifest.Retention{Infinite: true}, t0, 34*manifest.SealEntries+1)
	now := t0.Add(5100500 * time.Millisecond)
	c, _ := NewCollector(store, testConfig(func() time.Time { return now }))
	if _, err := c.Pass(ctx, ingest); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Open(store, mpath).Update(ctx, func(s *manifest.State) error {
		s.Config.Retention = manifest.Retention{AgeSecs: 100}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Pass(ctx, ingest)
	if err != nil || rep.TrimRaisedTo != 5001 {
		t.Fatalf("the pass after the retention change: trim raised to %d (%v), want 5001", rep.TrimRaisedTo, err)
	}
}

// Pass and FullPass of one collector running concurrently over the same stream (for -race).
func TestRetentionConcurrentPasses(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	arrivalsStream(t, store, manifest.Retention{AgeSecs: 100}, t0, 34*manifest.SealEntries+1)
	var mu sync.Mutex
	now := t0.Add(5100500 * time.Millisecond)
	c, _ := NewCollector(store, testConfig(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				mu.Lock()
				now = now.Add(time.Second)
				mu.Unlock()
				var err error
				if (g+i)%2 == 0 {
					_, err = c.FullPass(ctx, ingest)
				} else {
					_, err = c.Pass(ctx, ingest)
				}
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if st := load(t, store); st.TrimPoint < 5001 {
		t.Fatalf("trim point after concurrent passes: %d, want 5001 or more", st.TrimPoint)
	}
}

// Retention by age inside a sealed segment: the manifest keeps a segment whole while any of
// its entries is young, but its records past the age stop being readable at the next pass
// (the trim point rises past them), and their objects go once older than the grace period,
// while the segment stays until it has expired whole.
func TestRetentionByAgeInsideASegment(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	scfg := manifest.DefaultConfig()
	scfg.Retention = manifest.Retention{AgeSecs: 100}
	s := newStream(t, fs, scfg, nil)
	const n = 600 // past 512 entries, the oldest 256 are sealed into a segment
	for i := range n {
		s.now.Store(t0.Add(time.Duration(i) * time.Second).UnixMilli()) // record i arrives at i s
		s.object(1)
	}
	st := load(t, fs)
	if len(st.Segments) != 1 || st.Segments[0].FirstSeq != 0 || st.Segments[0].EndSeq != 256 {
		t.Fatalf("setup: segments %+v, want one over [0, 256)", st.Segments)
	}
	now := t0
	c, err := NewCollector(fs, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	pass := func(at time.Duration) Report {
		t.Helper()
		now = t0.Add(at)
		rep, err := c.Pass(ctx, ingest)
		if err != nil {
			t.Fatalf("pass at %v: %v", at, err)
		}
		return rep
	}

	// At 300.5 s, records 0-200 are past the 100 s age; the segment's newest (255 s) is not.
	rep := pass(300500 * time.Millisecond)
	st = load(t, fs)
	if rep.TrimRaisedTo != 201 || st.TrimPoint != 201 || rep.EntriesDropped != 0 || len(st.Segments) != 1 {
		t.Fatalf("at 300.5 s: trim raised to %d (manifest %d), %d entries dropped, %d segments; want 201, 201, 0, 1",
			rep.TrimRaisedTo, st.TrimPoint, rep.EntriesDropped, len(st.Segments))
	}
	if recs := checkIntact(t, fs); len(recs) != n-201 || recs[0].SeqNum != 201 {
		t.Fatalf("at 300.5 s: read %d records from %d, want %d from 201", len(recs), recs[0].SeqNum, n-201)
	}
	// Nothing moves while no further record expires, and the objects below the trim point are
	// not yet older than the grace period by the store's clock.
	if rep := pass(300900 * time.Millisecond); rep.TrimRaisedTo != 0 || rep.EntriesDropped != 0 || rep.Deleted != 0 {
		t.Fatalf("at 300.9 s: %+v, want no change", rep)
	}
	// Once they are, the objects of the entries below the trim point go, while the segment,
	// which still holds younger entries, stays, and reads from the trim point are unaffected.
	fs.advance(11 * time.Minute)
	rep = pass(301 * time.Second)
	st = load(t, fs)
	if rep.Deleted != 201 || len(st.Segments) != 1 || st.TrimPoint != 201 || rep.EntriesDropped != 0 {
		t.Fatalf("at 301 s, objects old: %d deleted, %d segments, trim point %d, %d entries dropped; want 201, 1, 201, 0",
			rep.Deleted, len(st.Segments), st.TrimPoint, rep.EntriesDropped)
	}
	if left := len(batchKeys(t, fs)); left != n-201 {
		t.Fatalf("at 301 s: %d batch objects left, want %d", left, n-201)
	}
	if recs := checkIntact(t, fs); len(recs) != n-201 || recs[0].SeqNum != 201 {
		t.Fatalf("at 301 s: read %d records from %d, want %d from 201", len(recs), recs[0].SeqNum, n-201)
	}

	// At 355.5 s the whole segment is past the age: it leaves, and its objects go once old.
	rep = pass(355500 * time.Millisecond)
	st = load(t, fs)
	if rep.EntriesDropped != 256 || len(st.Segments) != 0 || st.ReadableStart() != 256 {
		t.Fatalf("at 355.5 s: %d entries dropped, %d segments, readable from %d; want 256, 0, 256",
			rep.EntriesDropped, len(st.Segments), st.ReadableStart())
	}
	fs.advance(11 * time.Minute)
	pass(355600 * time.Millisecond)
	if left := len(batchKeys(t, fs)); left != n-256 {
		t.Fatalf("%d batch objects left, want %d", left, n-256)
	}
	if recs := checkIntact(t, fs); len(recs) != n-256 || recs[0].SeqNum != 256 {
		t.Fatalf("at the end: read %d records from %d, want %d from 256", len(recs), recs[0].SeqNum, n-256)
	}
}
