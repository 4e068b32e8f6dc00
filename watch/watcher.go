package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/internal/journalview"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// watcher watches one manifest for all the subscribers of one hub. Its goroutine (run) is
// the only one that reads the store; publishes, subscribers and its remote watch (a second
// goroutine, watchRemote, with Config.Remote) change its view under mu.
type watcher struct {
	h     *Hub
	store objectstore.Store
	key   string
	subs  int // guarded by h.mu

	ctx    context.Context // ends on stop: cancels a poll in flight
	cancel context.CancelFunc
	quit   chan struct{}
	once   sync.Once
	poke   chan struct{} // buffered 1: poll at once

	mu sync.Mutex
	// The view: the newest manifest seen (snap), or a failure that stands in its place (err).
	snap      *manifest.Snapshot
	err       error
	transient bool   // err is a run of ErrorAttempts plain failures, not a missing or corrupt manifest
	viewPoll  uint64 // the poll that produced or last confirmed the view; 0: a publish or subscriber
	version   string // what the next conditional GET names ("" while the manifest is missing)
	started   uint64 // polls started
	failures  int    // plain failures in a row
	wantFresh bool   // a subscriber waits for a poll to confirm the view: announce confirmations
	remoteOK  bool   // a remote watch answers: poll only every Remote.SafetyInterval
	changed   chan struct{}
}

func newWatcher(h *Hub, store objectstore.Store, key string) *watcher {
	ctx, cancel := context.WithCancel(objectstore.WithPurpose(context.Background(), objectstore.PurposePoll))
	return &watcher{h: h, store: store, key: key, ctx: ctx, cancel: cancel,
		quit: make(chan struct{}), poke: make(chan struct{}, 1), changed: make(chan struct{})}
}

func (w *watcher) id() watchKey { return watchKey{w.store, w.key} }

// stop ends the goroutine without waiting for it (Hub.Close waits).
func (w *watcher) stop() {
	w.once.Do(func() {
		close(w.quit)
		w.cancel()
		w.h.m.watchers.Dec()
	})
}

// broadcastLocked wakes every subscriber waiting now. Callers hold mu.
func (w *watcher) broadcastLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// pokeNow makes the watcher poll at once (a poke already pending will do).
func (w *watcher) pokeNow() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

func (w *watcher) run() {
	defer w.h.wg.Done()
	cfg := w.h.cfg
	if cfg.Holder != nil && cfg.Holder.Hold(w.ctx, w.key) {
		w.h.m.held.Inc()
	}
	interval := cfg.MinInterval
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-w.poke:
		case <-t.C:
		}
		changed, failed := w.poll()
		switch {
		case changed:
			interval = cfg.MinInterval
		case failed == 1:
			interval = cfg.MinInterval // the first failure of a run is retried soon
		default:
			interval = min(2*interval, cfg.MaxInterval)
		}
		w.mu.Lock()
		if w.remoteOK {
			// A remote watch answers for manifest writes and, with the view's tail in the
			// request, for a journal's windows.
			interval = cfg.Remote.SafetyInterval
		}
		w.mu.Unlock()
		if failed == 0 && cfg.Holder != nil && cfg.Holder.Holds(w.key) {
			// Every commit of the stream passes through this process's committer, which
			// publishes it: a poll only guards against a lost publish. Spread by a quarter
			// either way, so that streams followed together do not poll together.
			interval = cfg.HeldInterval*3/4 + rand.N(cfg.HeldInterval/2+1)
		}
		t.Reset(interval)
	}
}

// newer reports whether a is a later view than b of the same generation: a later manifest,
// or the same manifest folded further into its journal.
func newer(a, b *manifest.State) bool { return journalview.Newer(a, b) }

// poll reads the manifest once, conditionally on the version held, and folds its journal:
// when the manifest is not modified, from where the view got to (one GET of the next
// window's key when nothing was committed). It reports whether the view changed, and the
// number of plain failures in a row (0 after a success).
func (w *watcher) poll() (changed bool, failures int) {
	w.mu.Lock()
	w.started++
	n, version := w.started, w.version
	var known *manifest.State
	if w.snap != nil && w.err == nil {
		known = w.snap.State
	}
	w.mu.Unlock()
	st, got, err := w.load(version, known)
	if w.ctx.Err() != nil {
		return false, 0 // stopped
	}
	m := w.h.m
	w.mu.Lock()
	defer w.mu.Unlock()
	announce := w.wantFresh
	w.wantFresh = false
	defer func() {
		if changed || announce {
			w.broadcastLocked()
		}
	}()
	switch {
	case err == nil && st == nil: // not modified, and no new window
		m.polls.WithLabelValues("not_modified").Inc()
		w.failures = 0
		if w.err != nil && w.transient {
			w.err, w.transient, changed = nil, false, true
		}
		w.viewPoll = n
		return changed, 0
	case err == nil:
		m.polls.WithLabelValues("changed").Inc()
		w.failures = 0
		if w.snap != nil && w.err == nil && !newer(st, w.snap.State) && st.Generation == w.snap.State.Generation {
			// A publish or a subscriber brought a later manifest while this read was in
			// flight: keep it.
			w.viewPoll = n
			return false, 0
		}
		w.snap, w.err, w.transient, w.viewPoll, w.version = &manifest.Snapshot{State: st, Version: got}, nil, false, n, got
		m.wakes.WithLabelValues("poll").Inc()
		return true, 0
	case errors.Is(err, manifest.ErrNotExist) || errors.Is(err, manifest.ErrCorrupt):
		m.polls.WithLabelValues("changed").Inc()
		w.failures = 0
		changed = w.err == nil || w.transient
		w.err, w.transient, w.viewPoll, w.version = err, false, n, got
		return changed, 0
	default:
		m.polls.WithLabelValues("error").Inc()
		w.failures++
		w.h.cfg.Logger.Warn("manifest poll failed", "key", w.key, "failures", w.failures, "err", err)
		if w.failures >= w.h.cfg.ErrorAttempts && (w.err == nil || w.transient) {
			w.err, w.transient, w.viewPoll = fmt.Errorf("watch: %d manifest polls failed in a row: %w", w.failures, err), true, n
			changed = true
		}
		return changed, w.failures
	}
}

// load reads the manifest unless it is still at version, and folds its journal into it:
// (nil, "", nil) when the manifest is at version and known, the view read at version, has
// no new window; known folded further, at version, when it has. A missing manifest or a
// tombstone matches manifest.ErrNotExist (version ""); a corrupt one, or a corrupt window,
// manifest.ErrCorrupt, with its version.
func (w *watcher) load(version string, known *manifest.State) (*manifest.State, string, error) {
	obj, err := w.store.Get(w.ctx, w.key, objectstore.GetOptions{IfNoneMatch: version})
	switch {
	case errors.Is(err, objectstore.ErrNotModified):
		st, err := journalview.Refold(w.ctx, w.store, w.key, known)
		if err != nil {
			return nil, version, fmt.Errorf("watch: %w", err)
		}
		if st == nil {
			return nil, "", nil
		}
		return st, version, nil
	case errors.Is(err, objectstore.ErrNotFound):
		return nil, "", fmt.Errorf("%w: %s: %w", manifest.ErrNotExist, w.key, err)
	case err != nil:
		return nil, "", fmt.Errorf("watch: read manifest %s: %w", w.key, err)
	}
	defer obj.Body.Close()
	var buf bytes.Buffer
	buf.Grow(int(max(obj.Size, 0)) + bytes.MinRead)
	if _, err := buf.ReadFrom(obj.Body); err != nil {
		return nil, "", fmt.Errorf("watch: read manifest %s: %w", w.key, err)
	}
	if buf.Len() == 0 {
		return nil, "", fmt.Errorf("%w: %s: the stream was deleted (tombstone)", manifest.ErrNotExist, w.key)
	}
	st, err := manifest.Decode(w.key, buf.Bytes())
	if err != nil {
		return nil, obj.Version, err
	}
	if err := journalview.Fold(w.ctx, w.store, w.key, st); err != nil {
		return nil, obj.Version, fmt.Errorf("watch: %w", err)
	}
	return st, obj.Version, nil
}

// takeLocked makes snap the view if it is later than the view's manifest, from source
// (publish, subscriber); callers hold mu. A failure in the view is replaced only if it is a
// run of plain failures (snap proves the manifest readable again).
func (w *watcher) takeLocked(snap *manifest.Snapshot, source string) bool {
	if w.err != nil && !w.transient {
		return false
	}
	if w.snap != nil && !newer(snap.State, w.snap.State) {
		return false
	}
	w.snap, w.err, w.transient, w.viewPoll, w.version = snap, nil, false, 0, snap.Version
	w.h.m.wakes.WithLabelValues(source).Inc()
	w.broadcastLocked()
	return true
}

func (w *watcher) publish(snap *manifest.Snapshot) {
	if snap.State.Journal != nil {
		// A manifest written with a journal pointer is not a view (its windows are not
		// folded in): the poll reads and folds it, unless the view is at its tail already
		// (a checkpoint of windows the view holds).
		w.mu.Lock()
		have := w.snap != nil && w.err == nil && w.snap.State.Generation == snap.State.Generation &&
			w.snap.State.Tail.SeqNum >= snap.State.Tail.SeqNum
		w.mu.Unlock()
		w.h.m.publishes.WithLabelValues("snapshot", "no").Inc()
		if !have {
			w.pokeNow()
		}
		return
	}
	w.mu.Lock()
	taken := w.takeLocked(snap, "publish")
	// Not taken: an older manifest (a late publish, nothing to do), or one the view cannot
	// be compared with (another generation, or a failure in the view): poll to find out.
	poke := !taken && (w.snap == nil || w.err != nil || w.snap.State.Generation != snap.State.Generation)
	w.mu.Unlock()
	w.h.m.publishes.WithLabelValues("snapshot", yesNo(taken)).Inc()
	if poke {
		w.pokeNow()
	}
}

func (w *watcher) publishTail(tail uint64) {
	w.mu.Lock()
	behind := w.snap == nil || w.err != nil || w.snap.State.Tail.SeqNum < tail
	w.mu.Unlock()
	w.h.m.publishes.WithLabelValues("tail", yesNo(behind)).Inc()
	if behind {
		w.pokeNow()
	}
}

// publishWindow folds one published window section into the view: the view names journal
// id from a number at or below num, and the section starts at its tail (ApplyDelta checks
// that, so a section lost before this one, or one already in the view, is never skipped
// over or applied twice); the windows between From and num hold nothing of the stream's
// records (the tail proves it), and the view's From moves past num. Anything else polls.
func (w *watcher) publishWindow(gen [16]byte, id journal.ID, num uint64, d *manifest.Delta) {
	w.mu.Lock()
	taken := false
	if cur := w.snap; cur != nil && w.err == nil && cur.State.Generation == gen &&
		cur.State.Journal != nil && cur.State.Journal.ID == id && cur.State.Journal.From <= num {
		st := cur.State.Clone()
		if st.ApplyDelta(d) == nil {
			st.Journal.From = num + 1
			w.snap, w.viewPoll = &manifest.Snapshot{State: st, Version: cur.Version}, 0
			w.h.m.wakes.WithLabelValues("publish").Inc()
			w.broadcastLocked()
			taken = true
		}
	}
	w.mu.Unlock()
	w.h.m.publishes.WithLabelValues("window", yesNo(taken)).Inc()
	if !taken {
		w.pokeNow()
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
