package gc

import (
	"context"
	"sync"

	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// Journal windows (docs/journal.md, "Garbage collection") belong to no stream: a window is
// referenced while some stream's manifest names its journal from a number at or below it
// (its sections are still to be folded), or has a ranged entry in it whose records are
// readable. References only move forward (a pointer's From rises; a new pointer starts past
// every window written; ranged entries leave with retention), so a round of Run can collect
// them without locking: it lists the windows older than the grace period by the store's
// clock first, then reads every stream's manifest in its passes, and deletes the listed
// windows no stream referenced, but only when every pass read its stream. Fences are kept:
// a zombie committer's late window must keep failing on its journal's fence.

// journalRound gathers the references to journal windows of one round's passes.
type journalRound struct {
	mu         sync.Mutex
	refs       map[string]struct{}   // window keys named by ranged entries
	from       map[journal.ID]uint64 // per journal, the lowest From of a manifest naming it
	incomplete bool                  // a pass did not read its stream: delete nothing
}

// note records what one stream's pass found: the manifest's pointer, and the keys its view
// references.
func (r *journalRound) note(ms *manifest.State, refs map[string]struct{}) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := ms.Journal; p != nil {
		if f, ok := r.from[p.ID]; !ok || p.From < f {
			r.from[p.ID] = p.From
		}
	}
	for k := range refs {
		if _, _, ok := journal.ParseKey(k); ok {
			r.refs[k] = struct{}{}
		}
	}
}

func (r *journalRound) fail() {
	r.mu.Lock()
	r.incomplete = true
	r.mu.Unlock()
}

// referenced reports whether window n of journal id was referenced in the round.
func (r *journalRound) referenced(key string, id journal.ID, n uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.refs[key]; ok {
		return true
	}
	f, ok := r.from[id]
	return ok && f <= n
}

// startJournalRound lists the journal windows older than the grace period by the store's
// clock (probed with the first stream's probe key) and starts gathering references. It
// returns nil, and the round collects no window, when there is no stream to probe with or
// the listing fails.
func (c *Collector) startJournalRound(ctx context.Context, streams []stream.Stream) ([]string, *journalRound) {
	if len(streams) == 0 {
		return nil, nil
	}
	ctx = objectstore.WithPurpose(ctx, objectstore.PurposeGC)
	now, err := c.storeClock(ctx, streams[0])
	if err != nil {
		c.cfg.Logger.Warn("gc: no store clock for the journals; none collected this round", "err", err)
		return nil, nil
	}
	cutoff := now.Add(-c.cfg.GracePeriod)
	var old []string
	err = objectstore.ListAll(ctx, c.store, journal.Root, func(o objectstore.ObjectInfo) error {
		if _, _, ok := journal.ParseKey(o.Key); ok && !o.ModTime.IsZero() && o.ModTime.Before(cutoff) {
			old = append(old, o.Key)
		}
		return nil
	})
	if err != nil {
		c.cfg.Logger.Warn("gc: listing the journals failed; none collected this round", "err", err)
		return nil, nil
	}
	c.mu.Lock()
	c.journals = &journalRound{refs: map[string]struct{}{}, from: map[journal.ID]uint64{}}
	r := c.journals
	c.mu.Unlock()
	return old, r
}

// finishJournalRound deletes the old windows the round's passes did not reference (up to
// MaxDeletesPerPass); fences stay.
func (c *Collector) finishJournalRound(ctx context.Context, old []string, r *journalRound) {
	c.mu.Lock()
	c.journals = nil
	c.mu.Unlock()
	if r == nil || r.incomplete || ctx.Err() != nil {
		return
	}
	ctx = objectstore.WithPurpose(ctx, objectstore.PurposeGC)
	budget := c.cfg.MaxDeletesPerPass
	deleted := 0
	for _, key := range old {
		if budget <= 0 {
			break
		}
		id, n, _ := journal.ParseKey(key)
		if r.referenced(key, id, n) {
			continue
		}
		h, _, err := journal.ReadIndex(ctx, c.store, key)
		if err != nil || h.Kind != journal.KindWindow {
			continue // a fence, gone already, or unreadable: kept
		}
		budget--
		if err := c.store.Delete(ctx, key); err != nil {
			c.m.deleteErrors.Inc()
			c.cfg.Logger.Warn("gc: deleting a journal window failed; retrying next round", "key", key, "err", err)
			continue
		}
		deleted++
		c.m.deleted.Inc()
	}
	if deleted > 0 {
		c.cfg.Logger.Info("gc: deleted journal windows no stream references", "windows", deleted)
	}
}

// journalRoundNow is the round gathering references, if any (passes outside Run have none).
func (c *Collector) journalRoundNow() *journalRound {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.journals
}
