package consumer

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestAckRangesModel: random Ack / AckThrough / skipped ranges against a model that keeps
// one flag per seq_num; the checkpoint candidate is always the first unacknowledged seq_num.
func TestAckRangesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 14))
	for round := range 200 {
		const n = 64
		c := &Consumer{}
		var model [n + 1]bool
		for step := range 100 {
			from := uint64(rng.IntN(n))
			to := from + 1
			switch rng.IntN(4) {
			case 0: // AckThrough
				from = 0
			case 1: // a skipped range
				to = min(n, from+uint64(1+rng.IntN(6)))
			}
			c.addLocked(from, to)
			for i := from; i < to; i++ {
				model[i] = true
			}
			want := uint64(0)
			for want < n && model[want] {
				want++
			}
			if c.low != want {
				t.Fatalf("round %d step %d: ack [%d,%d): low %d, want %d (ranges %v)", round, step, from, to, c.low, want, c.acked)
			}
			for s := c.low; s < n; s++ {
				in := false
				for _, r := range c.acked {
					in = in || (r.from <= s && s < r.to)
				}
				if in != model[s] {
					t.Fatalf("round %d step %d: seq_num %d acknowledged %v, ranges say %v", round, step, s, model[s], in)
				}
			}
			for i, r := range c.acked {
				if r.from <= c.low || r.from >= r.to || (i > 0 && c.acked[i-1].to >= r.from) {
					t.Fatalf("round %d step %d: ranges not sorted, disjoint and above low %d: %v", round, step, c.low, c.acked)
				}
				for s := r.from; s < r.to; s++ {
					if !model[s] {
						t.Fatalf("round %d step %d: range %v holds unacknowledged %d", round, step, r, s)
					}
				}
			}
		}
	}
}

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
