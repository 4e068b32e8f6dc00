package gc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// TestSegmentSweepNotStarved: the data sweep and the segment sweep share
// MaxListPerPass. When the data listing ends exactly on the budget (here: 2 batch objects
// and the probe under the data prefix, MaxListPerPass 3), a segment sweep that always came
// second would get a budget of 0 on every pass, and an orphaned segment object (unreferenced,
// far older than the grace period) would never be deleted; the sweeps take turns to go first. gc doc: "lists the
// data prefix and the segment prefix from where the previous pass stopped ... A listing that
// reaches the end starts over next pass"; DESIGN: "Listing and deleting are bounded and
// resumable". The control (MaxListPerPass 4) deletes it in one pass.
func TestSegmentSweepNotStarved(t *testing.T) {
	const (
		mp = "streams/s/manifest"
		dp = "streams/s/data"
	)
	rng := rand.New(rand.NewPCG(seed(t), 5))
	run := func(maxList, passes int) (orphanLeft bool) {
		ctx := context.Background()
		fs := newFaultStore(objectstore.NewMemStore(), t0)
		s := newStream(t, fs, manifest.DefaultConfig(), func(c *producer.Config) {
			c.Stream = stream.MustNew(mp, dp)
		})
		s.object(1)
		s.object(1)
		s.p.Close(ctx)
		orphan := fmt.Sprintf("%s%08x-%020d-0-%016x", stream.SegmentPrefix(mp), rng.Uint32(), 0, rng.Uint64())
		if _, ok := stream.ParseSegmentKey(mp, orphan); !ok {
			t.Fatalf("%s is not a segment key", orphan)
		}
		if _, err := objectstore.PutBytes(ctx, fs, orphan, []byte("lost race"), objectstore.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		fs.advance(time.Hour)
		cfg := testConfig(func() time.Time { return t0.Add(time.Hour) })
		cfg.MaxListPerPass = maxList
		c, err := NewCollector(fs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range passes {
			if _, err := c.Pass(ctx, stream.MustNew(mp, dp)); err != nil {
				t.Fatal(err)
			}
			fs.advance(time.Minute)
		}
		_, err = fs.Head(ctx, orphan)
		return err == nil
	}
	if run(4, 1) {
		t.Fatal("control: with MaxListPerPass 4 the orphaned segment survived a pass")
	}
	if run(3, 20) {
		t.Fatal("with MaxListPerPass 3 (= the objects under the data prefix), 20 passes of one collector " +
			"never deleted an orphaned segment object an hour past the grace period: the segment sweep never gets any budget")
	}
}
