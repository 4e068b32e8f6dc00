package sim

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/manifest"
)

// runGC runs collector passes until stop, some of them cut short (a collector crash).
func (h *harness) runGC(ctx context.Context, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(h.sc.Seed, 0x9c))
	// One collector remembers cursors and failed deletes across passes, as the daemon's does;
	// a pass cut short is a collector crash, and a fresh collector takes over.
	col, err := gc.NewCollector(h.shared, h.gcConfig())
	if err != nil {
		h.violate("gc: %v", err)
		return
	}
	for {
		t := time.NewTimer(h.sc.GCInterval/2 + time.Duration(r.Int64N(int64(h.sc.GCInterval))))
		select {
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pctx, cancel := ctx, context.CancelFunc(func() {})
		cut := r.IntN(5) == 0
		if cut {
			pctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(300))*time.Millisecond)
		}
		rep, err := col.Pass(pctx, h.sc.Stream)
		cancel()
		if cut && err != nil {
			// A pass cut short leaves the collector to be rebuilt; its error is still
			// checked below.
			nc, cerr := gc.NewCollector(h.shared, h.gcConfig())
			if cerr != nil {
				h.violate("gc: %v", cerr)
				return
			}
			col = nc
		}
		h.mu.Lock()
		h.gcPasses++
		h.mu.Unlock()
		if err != nil && isCorruption(err) {
			h.violate("gc pass: %v", err)
		}
		if rep.Deleted > 0 || err != nil {
			h.event("gc pass: deleted %d, young %d, err %v", rep.Deleted, rep.Young, err)
		}
	}
}

func (h *harness) gcConfig() gc.Config {
	cfg := gc.DefaultConfig()
	cfg.GracePeriod = h.sc.Grace
	cfg.CommitDeadline = h.sc.Grace / 2 // the producers' (procs.go)
	cfg.KeepRecent = 0
	cfg.Backoff = manifest.Backoff{Initial: 5 * time.Millisecond, Max: 300 * time.Millisecond, Multiplier: 2}
	return cfg
}
