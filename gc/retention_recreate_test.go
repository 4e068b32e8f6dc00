package gc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

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
