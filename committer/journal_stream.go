package committer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
)

// roleState is where a stream stands with a journal committer. Its transitions are all in
// this file:
//
//	roleNone --take--> roleHeld --retire--> roleNone (the stream is forgotten)
//	roleHeld --reset (the journal failed or was fenced)--> roleNone
//	roleHeld --a checkpoint finds the manifest taken--> roleNone
type roleState uint8

const (
	// roleNone: the manifest does not point at this committer's journal; a request first
	// takes the role (one manifest write).
	roleNone roleState = iota
	// roleHeld: the manifest points at journal jid from a number no later than every window
	// holding the stream's commits; windows may include the stream.
	roleHeld
	// roleRetiring: a last checkpoint clears the pointer and gives the role up; requests wait
	// for it to end, then take the role afresh.
	roleRetiring
)

// folding is one durable window's delta of a stream that its manifest does not show yet.
type folding struct {
	num   uint64
	delta *manifest.Delta
	bytes int
}

// jstream is one stream of a journal committer. Fields after io are guarded by the
// committer's jmu; io (a one-slot channel, so that a wait for it ends with its context)
// serializes the stream's manifest reads and writes: role takes and checkpoints.
type jstream struct {
	path string
	m    *manifest.Handle
	io   chan struct{}

	state    roleState
	jid      journal.ID         // the journal the manifest points at (roleHeld)
	st       *manifest.State    // the working state: journal fields after the last window built
	snap     *manifest.Snapshot // the manifest as this committer last wrote or read it
	unfolded []folding          // durable windows' deltas not in the manifest yet, oldest first
	since    time.Time          // when unfolded[0] became durable
	inflight int                // windows built with the stream and not yet settled
	last     time.Time          // the last request for the stream
	users    int                // Commit calls using this jstream: it stays in the map while any
	// early is how much sooner than CheckpointInterval the stream is checkpointed, drawn at
	// random below half of it, so that streams that began together do not all checkpoint
	// at once.
	early time.Duration
}

// lock takes js.io, or fails when ctx ends first.
func (js *jstream) lock(ctx context.Context) error {
	select {
	case js.io <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (js *jstream) unlock() { <-js.io }

// jstream returns the stream's journal state, creating it (roleNone).
func (c *Committer) jstream(path string) (*jstream, error) {
	c.jmu.Lock()
	defer c.jmu.Unlock()
	if c.jclosed {
		return nil, errors.New("committer closed")
	}
	js := c.jstreams[path]
	if js == nil {
		js = &jstream{path: path, m: manifest.Open(c.cfg.Store, path, manifest.WithBackoff(c.cfg.Backoff)), io: make(chan struct{}, 1)}
		if half := c.cfg.CheckpointInterval / 2; half > 0 {
			js.early = rand.N(half)
		}
		c.jstreams[path] = js
		c.m.streams.Inc()
	}
	js.last = time.Now()
	js.users++
	return js, nil
}

// done ends a Commit call's use of js (jstream).
func (c *Committer) done(js *jstream) {
	c.jmu.Lock()
	js.users--
	c.jmu.Unlock()
}

// forgetLocked drops js from the map (under jmu) unless a Commit call uses it; a used one
// stays, without the role, and its next request takes the role afresh.
func (c *Committer) forgetLocked(js *jstream) {
	js.state, js.st, js.unfolded, js.snap = roleNone, nil, nil, nil
	if js.users == 0 && c.jstreams[js.path] == js {
		delete(c.jstreams, js.path)
		c.m.streams.Dec()
	}
}

// commitJournal is Commit in journal mode: take the stream's role if needed, then queue the
// request for the next window.
func (c *Committer) commitJournal(ctx context.Context, req *wire.Request) *wire.Response {
	if len(req.Batches) == 0 {
		// Checkpoints alone: they never go through windows (docs/journal.md), so they are
		// written to the manifest at once.
		return c.checkpointsOnly(ctx, req)
	}
	if len(req.Checkpoints) > 0 {
		// Batches go through a window, then the checkpoints to the manifest.
		batches, cps := *req, *req
		batches.Checkpoints, cps.Batches = nil, nil
		resp := c.commitJournal(ctx, &batches)
		if resp.Error != nil {
			return resp
		}
		cresp := c.checkpointsOnly(ctx, &cps)
		if cresp.Error != nil {
			// The batches are committed; the checkpoints are not (or not surely).
			for range cps.Checkpoints {
				resp.Checkpoints = append(resp.Checkpoints, wire.CheckpointResult{Error: cresp.Error.Message})
			}
			return resp
		}
		resp.Checkpoints = cresp.Checkpoints
		return resp
	}
	for attempt := 0; ; attempt++ {
		js, err := c.jstream(req.ManifestPath)
		if err != nil {
			return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: err.Error()}}
		}
		resp := c.queue(ctx, js, req)
		c.done(js)
		if resp.Error != nil && resp.Error.Code == codeRetake && attempt < 3 {
			continue // the role was lost before the window was built: nothing written
		}
		if resp.Error != nil && resp.Error.Code == codeRetake {
			resp.Error.Code = wire.CodeStopping
		}
		return resp
	}
}

// queue holds the stream's role, queues req for the next window and waits for its answer.
func (c *Committer) queue(ctx context.Context, js *jstream, req *wire.Request) *wire.Response {
	if resp := c.hold(ctx, js, req.Generation); resp != nil {
		return resp
	}
	pr := &jpending{pending: pending{ctx: ctx, req: req, done: make(chan *wire.Response, 1), at: time.Now()}, js: js}
	select {
	case c.jqueue <- pr:
	case <-ctx.Done():
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: ctx.Err().Error()}}
	case <-c.ctx.Done():
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "committer closed"}}
	}
	select {
	case resp := <-pr.done:
		return resp
	case <-c.jstopped:
		// The window loop ended; it answered every request it took.
		select {
		case resp := <-pr.done:
			return resp
		default:
			return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "committer closed"}}
		}
	}
}

// codeRetake is an internal answer: the stream's role was lost before its window was built
// (nothing of the request was written), so commitJournal takes the role again.
const codeRetake = "retake"

// hold makes sure the stream's manifest points at this committer's journal, taking the role
// when it does not. It returns an answer when the request cannot be committed here. gen is
// the generation the request was made for; "" takes any (Hold).
func (c *Committer) hold(ctx context.Context, js *jstream, gen string) *wire.Response {
	for {
		c.jmu.Lock()
		state, jid := js.state, js.jid
		current := c.jid
		held := state == roleHeld && jid == current
		sameGen := held && js.st.GenerationString() == gen
		c.jmu.Unlock()
		if sameGen {
			return nil
		}
		if err := js.lock(ctx); err != nil {
			return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: err.Error()}}
		}
		if held {
			if resp := c.dropGeneration(ctx, js, gen); resp != nil {
				js.unlock()
				return resp
			}
		}
		resp, again := c.take(ctx, js, gen)
		js.unlock()
		if !again {
			return resp
		}
		if err := ctx.Err(); err != nil {
			return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: err.Error()}}
		}
	}
}

// dropGeneration handles a request of another generation than the held stream's (under
// js.io): if the manifest has the request's generation (the stream was deleted and created
// again), the old generation's state is dropped, so that take takes the new stream's role
// (its windows of the old generation are skipped by every fold); otherwise the request's
// generation is gone, and it is answered so.
func (c *Committer) dropGeneration(ctx context.Context, js *jstream, gen string) *wire.Response {
	c.jmu.Lock()
	if js.state != roleHeld || js.st.GenerationString() == gen {
		c.jmu.Unlock()
		return nil // changed meanwhile: take looks again
	}
	c.jmu.Unlock()
	snap, err := js.m.LoadWithRetry(ctx)
	switch {
	case errors.Is(err, manifest.ErrNotExist):
		return &wire.Response{Error: &wire.Error{Code: wire.CodeGeneration, Message: err.Error()}}
	case err != nil:
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "reading the stream's manifest: " + err.Error()}}
	case snap.State.GenerationString() != gen:
		return &wire.Response{Error: &wire.Error{Code: wire.CodeGeneration, Message: fmt.Sprintf("the stream's generation is %s, not %s", snap.State.GenerationString(), gen)}}
	}
	c.jmu.Lock()
	if js.state == roleHeld && js.st.GenerationString() != gen {
		js.state, js.st, js.unfolded, js.snap = roleNone, nil, nil, nil
	}
	c.jmu.Unlock()
	return nil
}

// take takes the stream's role for the current journal (under js.io): it reads the
// manifest, seals a journal of another committer whose role has lapsed (or of this process's
// earlier incarnation), and writes the manifest with the role and a pointer to the current
// journal from its next window. again: the state changed meanwhile, look again.
func (c *Committer) take(ctx context.Context, js *jstream, gen string) (resp *wire.Response, again bool) {
	c.jmu.Lock()
	if js.state == roleHeld && js.jid == c.jid {
		c.jmu.Unlock()
		return nil, false
	}
	if c.jclosed {
		c.jmu.Unlock()
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "committer closed"}}, false
	}
	// A window built while the stream was held may still be in flight (the role was dropped
	// meanwhile): the manifest is read once it settled, so the fold below sees it if it
	// landed, and a failed one reset the journal.
	for js.inflight > 0 {
		c.jcond.Wait()
	}
	c.jmu.Unlock()
	cfg := &c.cfg
	var lastErr error
	for attempt := 0; attempt < cfg.MaxWriteRetries; attempt++ {
		if attempt > 0 && cfg.Backoff.Sleep(c.ctx, attempt-1) != nil {
			break
		}
		snap, err := js.m.LoadWithRetry(ctx)
		if errors.Is(err, manifest.ErrNotExist) {
			return &wire.Response{Error: &wire.Error{Code: wire.CodeGeneration, Message: err.Error()}}, false
		}
		if err != nil {
			lastErr = err
			continue
		}
		if gen != "" && snap.State.GenerationString() != gen {
			return &wire.Response{Error: &wire.Error{Code: wire.CodeGeneration, Message: fmt.Sprintf("the stream's generation is %s, not %s", snap.State.GenerationString(), gen)}}, false
		}
		st := snap.State.Clone()
		prev := st.Committer
		if prev.ID != cfg.ID && prev.URL == cfg.URL {
			st.ReleaseRole(prev.ID) // an earlier instance at our URL: its role is ours
		}
		if err := st.TakeRole(cfg.ID, cfg.URL, cfg.Now(), cfg.Lease); err != nil {
			var held *manifest.RoleHeldError
			errors.As(err, &held)
			return &wire.Response{Error: &wire.Error{Code: wire.CodeRoleHeld, Message: err.Error(), Holder: &held.Holder}}, false
		}
		c.jmu.Lock()
		current, next := c.jid, c.next
		c.jmu.Unlock()
		if st.Journal != nil && st.Journal.ID != current {
			// Another journal holds commits the manifest does not show: its committer's role
			// lapsed (TakeRole said so) or it was an earlier incarnation of ours. A holder
			// that still commits through it (it renews no lease by writes) keeps the stream:
			// the writer is sent there. Else close the journal and fold it in, then look
			// again.
			if role := c.holderAlive(ctx, prev, st.Journal.ID); role != nil {
				return &wire.Response{Error: &wire.Error{Code: wire.CodeRoleHeld, Message: fmt.Sprintf("%s at %s still commits the stream through journal %s", role.ID, role.URL, st.Journal.ID), Holder: role}}, false
			}
			if _, err := js.m.SealJournal(ctx); err != nil {
				lastErr = err
				continue
			}
			c.m.journalSeals.Inc()
			attempt = -1 // a fresh start on the sealed manifest
			continue
		}
		if st.Journal == nil {
			st.Journal = &manifest.JournalPointer{ID: current, From: next}
		} else if _, _, err := manifest.FoldJournal(ctx, c.cfg.Store, js.path, st); err != nil {
			// Our own journal, from a role this committer held and dropped (a failed
			// checkpoint): its windows for the stream are folded in before any new one.
			lastErr = err
			continue
		}
		wres, err := js.m.Write(ctx, st, snap.Version)
		if err != nil {
			lastErr = err
			continue
		}
		c.jmu.Lock()
		if c.jid != current {
			c.jmu.Unlock()
			return nil, true // the journal was reset meanwhile: point at the new one
		}
		work := wres.Snapshot.State.Clone()
		work.Entries, work.Segments = nil, nil
		work.OwnJournal(current)
		js.state, js.jid, js.st, js.snap = roleHeld, current, work, &wres.Snapshot
		js.unfolded = nil
		closed := c.jclosed
		c.jmu.Unlock()
		if prev.ID != cfg.ID {
			c.m.roleChanges.Inc()
			cfg.Logger.Info("took the committer role", "manifest", js.path, "previous", prev.ID, "journal", current)
		}
		if closed {
			// Close began while the role was written, and its last checkpoints may have
			// passed this stream: give the role up here (nothing was committed).
			_ = c.checkpoint(ctx, js, true)
			return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "committer closed"}}, false
		}
		return nil, false
	}
	msg := "committer stopping"
	if lastErr != nil {
		msg = lastErr.Error()
	}
	// Nothing was committed: the role write is not a commit.
	return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "taking the stream's role: " + msg}}, false
}
