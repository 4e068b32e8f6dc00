package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/internal/journalview"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// CreateStream creates a stream with cfg. manifest.ErrExists if it exists.
func (e *Engine) CreateStream(ctx context.Context, basin, name string, cfg manifest.Config) (*manifest.Snapshot, error) {
	st, err := stream.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	if err := e.requireBasin(ctx, basin); err != nil {
		return nil, err
	}
	return manifest.Open(e.cfg.Store, st.ManifestKey()).Create(ctx, cfg, e.cfg.Now())
}

// Stream loads a stream's manifest. manifest.ErrNotExist if there is none; ErrBasinNotFound
// when the basin itself is missing.
func (e *Engine) Stream(ctx context.Context, basin, name string) (*manifest.Snapshot, error) {
	st, err := stream.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	snap, err := manifest.Open(e.cfg.Store, st.ManifestKey()).Load(ctx)
	if errors.Is(err, manifest.ErrNotExist) {
		if berr := e.requireBasin(ctx, basin); berr != nil {
			return nil, berr
		}
	}
	return snap, err
}

// View loads a stream's manifest and folds its journal into a copy: the stream as every
// committed record shows it (its tail, its entries), which the manifest alone may not. Errors
// as Stream's; a corrupt journal window matches manifest.ErrCorrupt.
func (e *Engine) View(ctx context.Context, basin, name string) (*manifest.State, error) {
	snap, err := e.Stream(ctx, basin, name)
	if err != nil {
		return nil, err
	}
	view := snap.State.Clone()
	st, _ := stream.Locate(basin, name) // Stream checked the name
	if err := journalview.Fold(ctx, e.cfg.Store, st.ManifestKey(), view); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return view, nil
}

// Reconfigure changes a stream's config with fn.
func (e *Engine) Reconfigure(ctx context.Context, basin, name string, fn func(*manifest.Config) error) (*manifest.Snapshot, error) {
	st, err := stream.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	snap, err := manifest.Open(e.cfg.Store, st.ManifestKey()).Update(ctx, func(s *manifest.State) error {
		c := s.Config
		if err := fn(&c); err != nil {
			return err
		}
		if err := c.Validate(); err != nil {
			return err
		}
		if c == s.Config {
			return manifest.ErrNoChange
		}
		s.Config = c
		return nil
	})
	if errors.Is(err, manifest.ErrNotExist) {
		if berr := e.requireBasin(ctx, basin); berr != nil {
			return nil, berr
		}
	}
	return snap, err
}

// ListStreams lists a basin's streams ("" = the root namespace).
func (e *Engine) ListStreams(ctx context.Context, basin, prefix, startAfter string, limit int) ([]stream.Stream, bool, error) {
	if err := e.requireBasin(ctx, basin); err != nil {
		return nil, false, err
	}
	return catalog.ListStreams(ctx, e.cfg.Store, basin, prefix, startAfter, limit)
}

// DeleteStream deletes a stream: its manifest first (so readers and producers see it gone at
// once), then its batch and segment objects: those it references and those written before
// its manifest's last write, none of a stream created again under the name meanwhile. It
// returns how many objects it deleted, the manifest included. A producer of this engine for
// the stream is closed; producers elsewhere fail their next commit with
// manifest.ErrNotExist, and what they upload afterwards is unreferenced, left to the
// collector (package gc).
func (e *Engine) DeleteStream(ctx context.Context, basin, name string) (deleted int, err error) {
	st, err := stream.Locate(basin, name)
	if err != nil {
		return 0, err
	}
	// The view, so that objects committed in journal windows the manifest does not show
	// count as its own.
	view, err := e.View(ctx, basin, name)
	if err != nil {
		return 0, err
	}
	// Only objects of this stream go: those its manifest references (their keys are unique)
	// and those written before its manifest's last write. Objects written later may belong
	// to a stream created again under the name while this runs: they are left alone
	// (unreferenced ones go to the collector).
	head, err := e.cfg.Store.Head(ctx, st.ManifestKey())
	if err != nil {
		if errors.Is(err, objectstore.ErrNotFound) { // deleted meanwhile
			return 0, fmt.Errorf("%w: %s: %w", manifest.ErrNotExist, st.ManifestKey(), err)
		}
		return 0, err
	}
	refs := map[string]bool{}
	for _, r := range view.Segments {
		refs[r.Key] = true
	}
	// A segment that cannot be read only leaves its objects to the ModTime rule.
	_ = manifest.NewIndex(e.cfg.Store, view).Walk(ctx, 0, func(en *manifest.Entry) error {
		refs[en.Key] = true
		return nil
	})
	// The stream's producer is closed whatever happens next (the next append opens a new
	// one): it drains in the background, and what it commits after the manifest is gone fails.
	key := streamKey{basin, name}
	e.mu.Lock()
	if op := e.producers[key]; op != nil {
		delete(e.producers, key)
		e.closeAsyncLocked(op)
	}
	delete(e.readers, key)
	e.mu.Unlock()
	if err := e.cfg.Store.Delete(ctx, st.ManifestKey()); err != nil {
		return 0, err
	}
	deleted = 1
	for _, prefix := range []string{st.DataPrefix() + "/", st.SegmentPrefix()} {
		err := objectstore.ListAll(ctx, e.cfg.Store, prefix, func(o objectstore.ObjectInfo) error {
			if !refs[o.Key] && (o.ModTime.IsZero() || !o.ModTime.Before(head.ModTime)) {
				return nil
			}
			if err := e.cfg.Store.Delete(ctx, o.Key); err != nil {
				return err
			}
			deleted++
			return nil
		})
		if err != nil {
			return deleted, fmt.Errorf("engine: stream %q deleted, but removing its objects failed (the collector will retry): %w", name, err)
		}
	}
	return deleted, nil
}

// Tail returns a stream's tail, including commits still only in its journal.
func (e *Engine) Tail(ctx context.Context, basin, name string) (manifest.Position, error) {
	view, err := e.View(ctx, basin, name)
	if err != nil {
		return manifest.Position{}, err
	}
	return view.Tail, nil
}
