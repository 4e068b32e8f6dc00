package committer

import (
	"context"
	"errors"
	"sync"
	"time"
)

// maxConcurrentCheckpoints bounds the manifest writes the checkpoint loop has in flight.
const maxConcurrentCheckpoints = 16

// checkpointLoop brings the manifests of the journal's streams up to date (docs/journal.md,
// "Checkpoints"): a stream is checkpointed CheckpointInterval (less a random part of up to
// half of it, drawn once per stream, so that streams do not checkpoint in waves) after its
// first commit that its manifest does not show, and when CheckpointWindows windows hold
// such commits, never
// only to renew its role (the committer answers probes instead: see probe.go); a stream
// without a request for IdleTimeout is retired (its manifest no longer points at the
// journal and the role is given up).
func (c *Committer) checkpointLoop() {
	defer c.wg.Done()
	tick := time.NewTicker(min(time.Second, c.cfg.CheckpointInterval/4))
	defer tick.Stop()
	sem := make(chan struct{}, maxConcurrentCheckpoints)
	var running sync.WaitGroup
	defer running.Wait()
	for {
		select {
		case <-tick.C:
		case <-c.ctx.Done():
			return
		}
		for _, d := range c.dueCheckpoints(time.Now()) {
			select {
			case sem <- struct{}{}:
			case <-c.ctx.Done():
				return
			}
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-sem }()
				if d.js.lock(c.ctx) != nil {
					return
				}
				defer d.js.unlock()
				_ = c.checkpoint(c.ctx, d.js, d.retire) // logged; the stream's role is dropped
			}()
		}
	}
}

type due struct {
	js     *jstream
	retire bool
}

// dueCheckpoints lists the streams whose checkpoint is due at now.
func (c *Committer) dueCheckpoints(now time.Time) []due {
	c.jmu.Lock()
	defer c.jmu.Unlock()
	var out []due
	for _, js := range c.jstreams {
		if js.state != roleHeld {
			if js.state == roleNone && c.idleFor(js, now) {
				c.forgetLocked(js) // never took the role, or lost it
			}
			continue
		}
		windows, bytes := len(js.unfolded), 0
		for _, f := range js.unfolded {
			bytes += f.bytes
		}
		switch {
		case c.idleFor(js, now):
			out = append(out, due{js, true})
		case windows > 0 && (now.Sub(js.since) >= c.cfg.CheckpointInterval-js.early || windows >= c.cfg.CheckpointWindows || bytes >= checkpointBytes):
			out = append(out, due{js, false})
		}
	}
	return out
}

// checkpointBytes: a stream whose unfolded sections pass this size is checkpointed, so a
// reader from another process has that much at most to fold from the journal.
const checkpointBytes = 4 << 20

// closeJournal retires every stream (a last checkpoint that clears the manifest's pointer
// and gives the role up), after the window loop stopped.
func (c *Committer) closeJournal(ctx context.Context) error {
	c.jmu.Lock()
	var held []*jstream
	for _, js := range c.jstreams {
		if js.state == roleHeld {
			held = append(held, js)
		}
	}
	c.jmu.Unlock()
	sem := make(chan struct{}, maxConcurrentCheckpoints)
	errs := make([]error, len(held))
	var wg sync.WaitGroup
	for i, js := range held {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if errs[i] = js.lock(ctx); errs[i] != nil {
				return
			}
			defer js.unlock()
			errs[i] = c.checkpoint(ctx, js, true)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
