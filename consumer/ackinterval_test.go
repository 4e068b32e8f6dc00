package consumer

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestAckIntervalIsAnUpperBound: Config.AckInterval says "a group's pending
// acknowledgements are written at most this long after the first of them", the package doc
// says the checkpoint is written "AckInterval after the first pending acknowledgement" and
// the README's consumer-crash table "the checkpoint is written at most `AckInterval` later".
// flushLoop looks every AckInterval/4 and writes at the last look before AckInterval has
// passed (fake time: testing/synctest).
func TestAckIntervalIsAnUpperBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := objectstore.NewMemStore()
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		var recs []batchfmt.Record
		for i := range 10 {
			recs = append(recs, rec(baseTS+uint64(i), "x"))
		}
		f.object(recs)
		cfg := groupConfig(f, "g")
		cfg.AckInterval = 10 * time.Second
		c := openGroup(t, cfg)
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
		// The flush loop ticks every 2.5 s from Open; acknowledge 3 s after Open.
		time.Sleep(3 * time.Second)
		if err := c.AckThrough(4); err != nil {
			t.Fatal(err)
		}
		acked := time.Now()
		time.Sleep(cfg.AckInterval + time.Millisecond)
		synctest.Wait()
		if g := groupState(t, store, "g"); g.Checkpoint != 5 {
			t.Errorf("checkpoint %d is still unwritten %v after the acknowledgement (AckInterval %v: \"written at most this long after the first of them\")",
				g.Checkpoint, time.Since(acked), cfg.AckInterval)
		}
		if err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		f.p.Close(ctx)
	})
}
