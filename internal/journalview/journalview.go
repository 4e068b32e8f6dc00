// Package journalview keeps a reader's view of a stream whose manifest names a journal: the
// manifest's state with the journal's windows folded in (manifest.FoldJournal), so that the
// view holds every committed record, and so that a follower can bring its view up to date
// from where it got to, reading each new window once.
//
// A manifest with a journal pointer can change without its version changing: a follower
// whose conditional manifest read says "not modified" calls Refold, which costs one GET of
// the next window's key (a 404) when nothing was committed.
package journalview

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Fold brings st, a state the caller owns (freshly decoded, or a clone), up to date with its
// journal, in place. Without a pointer it does nothing. A malformed window, or a section
// that does not continue the stream, matches manifest.ErrCorrupt (and journal.ErrCorrupt
// when the window's framing is at fault): it is never skipped. On an error st is unusable.
func Fold(ctx context.Context, store objectstore.Store, manifestKey string, st *manifest.State) error {
	if st.Journal == nil {
		return nil
	}
	id, from := st.Journal.ID, st.Journal.From
	if _, _, err := manifest.FoldJournal(ctx, store, manifestKey, st); err != nil {
		err = fmt.Errorf("fold journal %s from %d into %s: %w", id, from, manifestKey, err)
		switch {
		case errors.Is(err, manifest.ErrCorrupt), errors.Is(err, manifest.ErrUnsupportedVersion):
		case errors.Is(err, journal.ErrCorrupt):
			err = fmt.Errorf("%w: %w", manifest.ErrCorrupt, err)
		case errors.Is(err, journal.ErrUnsupportedVersion):
			err = fmt.Errorf("%w: %w", manifest.ErrUnsupportedVersion, err)
		}
		return err
	}
	return nil
}

// Refold continues the fold of known, a view returned by Fold or Refold (not modified):
// it returns a new view holding the windows committed since, or nil when there is none (the
// next window is absent or a fence). It reads only the windows after known's.
func Refold(ctx context.Context, store objectstore.Store, manifestKey string, known *manifest.State) (*manifest.State, error) {
	if known == nil || known.Journal == nil {
		return nil, nil
	}
	st := known.Clone()
	if err := Fold(ctx, store, manifestKey, st); err != nil {
		return nil, err
	}
	if st.Journal.From == known.Journal.From {
		return nil, nil
	}
	return st, nil
}

// Newer reports whether view a is later than view b of the same generation: a later
// manifest (higher write counter), or the same manifest folded further into its journal.
func Newer(a, b *manifest.State) bool {
	if a.Generation != b.Generation {
		return false
	}
	if a.WriteCounter != b.WriteCounter {
		return a.WriteCounter > b.WriteCounter
	}
	return a.Journal != nil && b.Journal != nil && a.Journal.ID == b.Journal.ID && a.Journal.From > b.Journal.From
}
