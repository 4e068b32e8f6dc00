package gc

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// DeleteOnEmpty.MinAgeSecs is any uint64 (manifest.Config.Validate puts no bound on it, the S2
// API passes the JSON value through): 18446744074 s (~585 years), too long for a
// time.Duration, must not wrap (it once became 290 ms, and an empty stream configured to live
// "forever" was deleted at the second pass).
func TestDeleteOnEmptyMinAgeOverflow(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	scfg := manifest.DefaultConfig()
	scfg.DeleteOnEmpty = manifest.DeleteOnEmpty{MinAgeSecs: 18446744074}
	if _, err := manifest.Open(store, mpath).Create(ctx, scfg, t0); err != nil {
		t.Fatalf("create (refusing the config would be a fine fix): %v", err)
	}
	now := t0.Add(time.Hour)
	c, err := NewCollector(store, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		rep, err := c.Pass(ctx, ingest)
		if err != nil {
			t.Fatal(err)
		}
		if rep.StreamDeleted {
			t.Fatalf("pass %d (%v after the stream was first seen empty): stream deleted under delete_on_empty.min_age_secs=%d",
				i, time.Duration(i)*time.Second, scfg.DeleteOnEmpty.MinAgeSecs)
		}
		now = now.Add(time.Second)
	}
}

// countGets counts Gets of one key and fails them after a limit (to stop a runaway).
type countGets struct {
	objectstore.Store
	key   string
	n     atomic.Int64
	limit int64
}

func (c *countGets) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if key == c.key && c.n.Add(1) > c.limit {
		return nil, objectstore.NewOpError("get", key, nil, errors.New("runaway: too many reads of one segment"))
	}
	return c.Store.Get(ctx, key, opts)
}

// Collector.referenced follows segment references recursively, and caches a segment only
// after its whole subtree is read. A segment whose references lead back to itself (a
// well-formed, checksummed object, only its graph is wrong) must fail the pass as corrupt, as
// it fails a reader: the collector checks that a loaded segment has the level and generation
// its reference names (manifest.LoadSegmentOf), so levels strictly decrease down a walk.
// Without that check the recursion had no bound, and the daemon died of a stack overflow;
// countGets stops such a runaway here.
func TestSegmentCycleFailsPass(t *testing.T) {
	ctx := context.Background()
	base := objectstore.NewMemStore()
	snap, err := manifest.Open(base, mpath).Create(ctx, manifest.DefaultConfig(), t0)
	if err != nil {
		t.Fatal(err)
	}
	key := stream.SegmentPrefix(mpath) + "00000000-00000000000000000000-1-0123456789abcdef"
	seg := &manifest.Segment{Level: 1, Generation: snap.State.Generation,
		Refs: []manifest.SegmentRef{{Key: key, Level: 0}}}
	if _, err := objectstore.PutBytes(ctx, base, key, seg.Encode(), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Open(base, mpath).Update(ctx, func(s *manifest.State) error {
		s.Segments = []manifest.SegmentRef{{Key: key, Level: 1}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	store := &countGets{Store: base, key: key, limit: 1000}
	c, err := NewCollector(store, testConfig(time.Now))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Pass(ctx, ingest)
	if n := store.n.Load(); n > 2 {
		t.Fatalf("the pass read segment %s %d times, following its self-reference (pass error: %v)", key, n, err)
	}
	if !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("pass over a stream whose segment graph is cyclic: %v, want ErrCorrupt", err)
	}
}
