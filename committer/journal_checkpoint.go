package committer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// A journal stream's manifest writes other than the role take: group checkpoints, which
// never go through windows, and the checkpoints that fold its durable windows in.

// checkpointsOnly writes a request's group checkpoints straight to the manifest.
func (c *Committer) checkpointsOnly(ctx context.Context, req *wire.Request) *wire.Response {
	var out *wire.Response
	_, err := manifest.Open(c.cfg.Store, req.ManifestPath, manifest.WithBackoff(c.cfg.Backoff)).Update(ctx, func(st *manifest.State) error {
		out = apply(st, req)
		if out.Error != nil {
			return manifest.ErrNoChange
		}
		return nil
	})
	switch {
	case errors.Is(err, manifest.ErrNotExist):
		return &wire.Response{Error: &wire.Error{Code: wire.CodeGeneration, Message: err.Error()}}
	case errors.Is(err, manifest.ErrOutcomeUnknown) || (err != nil && out != nil && out.Error == nil):
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStorage, Message: err.Error()}}
	case err != nil:
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: err.Error()}}
	}
	c.m.checkpoints.Add(float64(len(req.Checkpoints)))
	return out
}

// errLost: a checkpoint found the manifest no longer pointing at this committer's journal.
var errLost = errors.New("committer: the stream's manifest no longer points at this journal")

// checkpoint folds the stream's durable windows into its manifest (writing the role, with a
// lease from now, as any write does), or, with retire, also clears the pointer and gives
// the role up (under js.io).
func (c *Committer) checkpoint(ctx context.Context, js *jstream, retire bool) error {
	c.jmu.Lock()
	if js.state != roleHeld {
		c.jmu.Unlock()
		return nil
	}
	if retire {
		js.state = roleRetiring // no window includes the stream from now on
		for js.inflight > 0 {
			c.jcond.Wait()
		}
		if js.state != roleRetiring {
			// A window that held the stream failed, and may still land: only a seal (by
			// the next writer) may end the journal for it, never a cleared pointer.
			c.jmu.Unlock()
			return nil
		}
	}
	jid := js.jid
	folds := append([]folding(nil), js.unfolded...)
	snap := js.snap
	c.jmu.Unlock()
	ctx = objectstore.WithPurpose(ctx, objectstore.PurposeCommit)
	var lastErr error
	interrupted := false // ctx ended between attempts
	for attempt := 0; attempt < c.cfg.MaxWriteRetries; attempt++ {
		if attempt > 0 {
			if c.cfg.Backoff.Sleep(ctx, attempt-1) != nil {
				interrupted = true
				break
			}
			var err error
			if snap, err = js.m.LoadWithRetry(ctx); err != nil {
				lastErr = err
				if errors.Is(err, manifest.ErrNotExist) {
					break
				}
				continue
			}
		}
		st := snap.State.Clone()
		if st.Journal == nil || st.Journal.ID != jid || st.Committer.ID != c.cfg.ID {
			lastErr = errLost
			break
		}
		var err error
		for _, f := range folds {
			if f.num < st.Journal.From {
				continue // folded by an earlier checkpoint whose answer was lost
			}
			if err = st.ApplyDelta(f.delta); err != nil {
				break
			}
		}
		if err != nil {
			lastErr = err
			break
		}
		if len(folds) > 0 {
			st.Journal.From = max(st.Journal.From, folds[len(folds)-1].num+1)
			// A fold only raises producer rows: bound the table here, as Apply does for a
			// direct writer, or it grows with every producer that ever committed.
			st.PruneProducers(uint64(max(c.cfg.Now().UnixMilli(), 0)))
		}
		if retire {
			st.Journal = nil
			st.ReleaseRole(c.cfg.ID)
		} else if err := st.TakeRole(c.cfg.ID, c.cfg.URL, c.cfg.Now(), c.cfg.Lease); err != nil {
			lastErr = err
			break
		}
		wres, err := js.m.Write(ctx, st, snap.Version)
		if err != nil {
			lastErr = err
			if errors.Is(err, manifest.ErrConflict) || errors.Is(err, manifest.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrThrottled) {
				continue // a group's ack or the collector wrote meanwhile: fold again on theirs
			}
			continue
		}
		c.m.journalCheckpoints.Inc()
		c.jmu.Lock()
		if js.state == roleNone || js.jid != jid {
			// The journal was reset while the write was in flight: the stream takes its role
			// afresh (sealing jid, which this write pointed at) at its next request.
			c.jmu.Unlock()
			return nil
		}
		js.snap = &wres.Snapshot
		if len(folds) > 0 {
			last := folds[len(folds)-1].num
			for len(js.unfolded) > 0 && js.unfolded[0].num <= last {
				js.unfolded = js.unfolded[1:]
			}
			if len(js.unfolded) > 0 {
				js.since = time.Now()
			}
		}
		if retire {
			c.forgetLocked(js)
		} else {
			js.st.Config = wres.Snapshot.State.Config // a reconfiguration takes effect
		}
		c.jmu.Unlock()
		return nil
	}
	// The manifest is not ours any more, or the store keeps failing: forget the stream's
	// state; the windows stay in the journal, and whoever writes the stream next folds them
	// (the manifest's pointer names them).
	c.jmu.Lock()
	if retire {
		c.forgetLocked(js)
	} else if interrupted && c.ctx.Err() != nil {
		// Close stopped it: the stream keeps its state, so that Close's last checkpoint
		// clears the pointer and gives the role up (a write that landed meanwhile is found
		// by that checkpoint's reload).
		c.jmu.Unlock()
		return fmt.Errorf("committer: checkpoint of %s: %w", js.path, c.ctx.Err())
	} else if js.jid == jid {
		js.state, js.st, js.unfolded, js.snap = roleNone, nil, nil, nil
	}
	c.jmu.Unlock()
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	c.cfg.Logger.Warn("journal checkpoint failed, the stream's role is dropped", "manifest", js.path, "retire", retire, "err", lastErr)
	return fmt.Errorf("committer: checkpoint of %s: %w", js.path, lastErr)
}
