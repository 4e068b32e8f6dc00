package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/watch"
)

// awaitWatched is the tail of a following read with Config.Watch: instead of polling the
// manifest itself, the session asks the stream's shared watcher for a newer manifest, at
// once (wait false) or waiting for one. It reports whether the stream has moved past what
// the session had planned. The subscription is taken on the first call and released by
// Close.
func (s *Session) awaitWatched(ctx context.Context, wait bool) (bool, error) {
	if s.sub == nil {
		sub, err := s.r.cfg.Watch.Subscribe(s.r.store, s.r.cfg.Stream.ManifestKey())
		if err != nil {
			return false, fmt.Errorf("consumer: follow %s: %w", s.r.cfg.Stream.ManifestKey(), err)
		}
		s.sub = sub
	}
	var wctx context.Context
	if wait {
		// Close ends the wait as it ends a poll's sleep.
		var cancel context.CancelFunc
		wctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.ctx, cancel)()
	}
	for {
		known := &manifest.Snapshot{State: s.st.Load(), Version: s.version}
		var snap *manifest.Snapshot
		var err error
		if wait {
			snap, err = s.sub.Wait(wctx, known)
		} else {
			snap, err = s.sub.Check(known)
		}
		switch {
		case err != nil && s.ctx.Err() != nil:
			return false, ErrClosed
		case err != nil && ctx.Err() != nil:
			return false, ctx.Err()
		case errors.Is(err, manifest.ErrNotExist):
			return false, &notFoundError{err}
		case errors.Is(err, watch.ErrClosed):
			return false, fmt.Errorf("%w: %w", ErrClosed, err)
		case err != nil:
			return false, err
		case snap == nil:
			return false, nil // nothing newer, and not waiting
		}
		changed, err := s.adopt(snap.State, snap.Version)
		if err != nil || changed || !wait {
			return changed, err
		}
	}
}
