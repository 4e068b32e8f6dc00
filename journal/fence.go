package journal

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/objectstore"
)

// Walk reads journal id's objects in order from number from, calling fn with each window's
// header and index, and stops at the first missing number or the first fence. It returns
// that number and whether a fence holds it. fn's error stops the walk and is returned.
func Walk(ctx context.Context, s objectstore.Store, id ID, from uint64, fn func(h Header, rows []IndexRow) error) (end uint64, fenced bool, err error) {
	for n := from; ; n++ {
		key := Key(id, n)
		h, rows, err := ReadIndex(ctx, s, key)
		if errors.Is(err, objectstore.ErrNotFound) {
			return n, false, nil
		}
		if err != nil {
			return n, false, err
		}
		if h.Journal != id || h.Number != n {
			return n, false, &CorruptError{Key: key, Offset: 8, Reason: fmt.Sprintf("header names journal %s number %d", h.Journal, h.Number)}
		}
		if h.Kind == KindFence {
			return n, true, nil
		}
		if fn != nil {
			if err := fn(h, rows); err != nil {
				return n, false, err
			}
		}
	}
}

// Fence closes journal id: it walks from number from (calling fn for each window, as Walk
// does) and writes a fence at the first missing number, create-only. If a window lands there
// first, it goes on past it; if a fence is already there, the journal was closed by someone
// else and Fence uses theirs. It returns the number the fence holds: the journal's history
// is its windows from from up to it, and no window can ever be added to it.
//
// Fencing a live committer is safe (its next window write fails with ErrFenced, so nothing
// it writes later is acknowledged) but closes the journal for every stream it holds: callers
// wait for its lease to lapse first.
func Fence(ctx context.Context, s objectstore.Store, id ID, from uint64, fencer Header, fn func(h Header, rows []IndexRow) error) (uint64, error) {
	n := from
	for {
		end, fenced, err := Walk(ctx, s, id, n, fn)
		if err != nil || fenced {
			return end, err
		}
		h := fencer
		h.Kind, h.Journal, h.Number = KindFence, id, end
		obj, err := Encode(h, nil)
		if err != nil {
			return end, err
		}
		switch err := Write(ctx, s, h, obj); {
		case err == nil, errors.Is(err, ErrFenced):
			return end, nil
		case errors.Is(err, objectstore.ErrPreconditionFailed):
			n = end // a window landed at end first: walk it, then try the next number
		default:
			return end, err
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
	}
}
