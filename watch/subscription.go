package watch

import (
	"context"
	"sync"

	"github.com/sluice-dev/sluice/manifest"
)

// Subscription is one follower's interest in a stream. Check and Wait are used by one
// goroutine at a time; Close may be called from any goroutine, once or more.
type Subscription struct {
	h    *Hub
	w    *watcher
	once sync.Once

	// Guarded by w.mu.
	closed bool
	begun  bool     // since and gen are set
	since  uint64   // a view of another generation, or a failure, must come from a later poll
	gen    [16]byte // the generation the follower last held
	asked  uint64   // the poll count when this subscriber last poked the watcher
}

// Check returns, without waiting, the watcher's manifest if it is newer than known (see the
// package doc for "newer"), or the failure that stands in its place; (nil, nil) when there
// is nothing newer. known is what the follower holds (nil: nothing yet); the watcher may
// take it, if it is later than its own view, so that the other followers see it.
func (s *Subscription) Check(known *manifest.Snapshot) (*manifest.Snapshot, error) {
	snap, err, _, done := s.look(known)
	if done {
		return snap, err
	}
	return nil, nil
}

// Wait is Check that waits for something newer than known: until the watcher sees a change,
// a publish brings one, ctx ends (ctx's error), or the subscription or hub is closed
// (ErrClosed).
func (s *Subscription) Wait(ctx context.Context, known *manifest.Snapshot) (*manifest.Snapshot, error) {
	for {
		snap, err, ch, done := s.look(known)
		if done {
			return snap, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.h.quit:
			return nil, ErrClosed
		}
	}
}

// look compares the watcher's view with known. done: snap or err is the answer; otherwise ch
// is closed when the view next changes.
func (s *Subscription) look(known *manifest.Snapshot) (snap *manifest.Snapshot, err error, ch <-chan struct{}, done bool) {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.closed {
		return nil, ErrClosed, nil, true
	}
	select {
	case <-s.h.quit:
		return nil, ErrClosed, nil, true
	default:
	}
	var kst *manifest.State
	if known != nil {
		kst = known.State
	}
	if !s.begun || (kst != nil && kst.Generation != s.gen) {
		// What the follower holds was read before now: a view it cannot compare with must
		// come from a poll that starts later.
		s.begun, s.since = true, w.started
		if kst != nil {
			s.gen = kst.Generation
		}
	}
	fresh := w.viewPoll > s.since // the view comes from a poll that started after since
	switch {
	case w.err != nil:
		if fresh {
			return nil, w.err, nil, true
		}
	case w.snap == nil:
		if kst != nil && w.takeLocked(known, "subscriber") {
			return nil, nil, w.changed, false
		}
	case kst == nil:
		return w.snap, nil, nil, true
	case w.snap.State.Generation == kst.Generation:
		if newer(w.snap.State, kst) {
			return w.snap, nil, nil, true
		}
		w.takeLocked(known, "subscriber") // if the follower is ahead of the watcher
		return nil, nil, w.changed, false
	default: // another generation
		if fresh {
			return w.snap, nil, nil, true
		}
	}
	// The view is a failure or another generation that predates what the follower holds, or
	// there is no view yet: ask for a poll, and to be told of its result even if it changes
	// nothing.
	w.wantFresh = true
	if s.asked < w.started || s.asked == 0 {
		s.asked = max(w.started, 1)
		w.pokeNow()
	}
	return nil, nil, w.changed, false
}

// Close ends the subscription; the stream's last one stops its watcher.
func (s *Subscription) Close() error {
	s.once.Do(func() {
		s.w.mu.Lock()
		s.closed = true
		s.w.broadcastLocked() // a Wait of this subscription in progress returns ErrClosed
		s.w.mu.Unlock()
		s.h.release(s.w)
	})
	return nil
}
