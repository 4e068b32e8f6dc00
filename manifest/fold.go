package manifest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
)

// FoldJournal brings st (the caller's private copy; changed in place) up to date with its
// journal: it walks st.Journal.ID from st.Journal.From (journal.Walk) and applies, in
// window order, the section of each window whose index has a row for (manifestKey,
// st.Generation); rows of another generation are skipped. It stops at the first missing
// number or fence (fenced), and sets st.Journal.From to that number, end. On an error,
// st holds the windows before end, which is where it stopped. A malformed window or a gap
// in seq_nums is an error matching journal.ErrCorrupt or ErrCorrupt, never skipped.
// Without a pointer it does nothing and returns (0, false, nil).
func FoldJournal(ctx context.Context, store objectstore.Store, manifestKey string, st *State) (end uint64, fenced bool, err error) {
	if st.Journal == nil {
		return 0, false, nil
	}
	store = retryingReads{store, DefaultBackoff()}
	end, fenced, err = journal.Walk(ctx, store, st.Journal.ID, st.Journal.From, func(h journal.Header, rows []journal.IndexRow) error {
		return foldWindow(ctx, store, manifestKey, st, h, rows)
	})
	st.Journal.From = max(st.Journal.From, end)
	return end, fenced, err
}

// foldWindow applies st's section of one window, if it has one.
func foldWindow(ctx context.Context, store objectstore.Store, manifestKey string, st *State, h journal.Header, rows []journal.IndexRow) error {
	key := journal.Key(h.Journal, h.Number)
	for _, row := range rows {
		if row.Manifest != manifestKey || row.Generation != st.Generation {
			continue
		}
		if row.FirstSeq != st.Tail.SeqNum {
			return corrupt(key, "section of %q starts at seq_num %d, the stream is at %d", manifestKey, row.FirstSeq, st.Tail.SeqNum)
		}
		data, err := journal.ReadSection(ctx, store, key, row)
		if err != nil {
			return err
		}
		d, _, err := DecodeDelta(key, data, row.Offset)
		if err != nil {
			return err
		}
		if d.Tail.SeqNum != row.NextSeq {
			return corrupt(key, "section of %q ends at seq_num %d, its index row says %d", manifestKey, d.Tail.SeqNum, row.NextSeq)
		}
		return st.ApplyDelta(d)
	}
	return nil
}

// LoadView is Load, then FoldJournal into a copy: the Snapshot is the manifest as read (its
// Version is what a conditional write names), the *State the stream as every committed
// record shows it (a copy the caller may change; equal to the snapshot's without a pointer).
func (m *Handle) LoadView(ctx context.Context) (*Snapshot, *State, error) {
	snap, err := m.Load(ctx)
	if err != nil {
		return nil, nil, err
	}
	view := snap.State.Clone()
	if view.Journal == nil {
		return snap, view, nil
	}
	if _, _, err := FoldJournal(ctx, m.store, m.path, view); err != nil {
		return nil, nil, fmt.Errorf("manifest: fold %s into %s: %w", journal.Prefix(snap.State.Journal.ID), m.path, err)
	}
	return snap, view, nil
}

// SealJournal closes the journal the manifest names and folds it in, so that the caller
// may Apply to the stream. It fences the journal at its first free number from the
// pointer's From (journal.Fence; a fence already there is used), folds the windows below
// the fence, clears the pointer and writes with If-Match, as Update does: on a conflict it
// reloads and repeats (the fence is then found in place). A manifest with no pointer, or
// whose pointer names another journal than the one first found, is returned as is. The
// committer role is left alone.
//
// Fencing closes the journal for every stream its committer writes: callers seal only a
// journal whose committer's role has lapsed or that they own (docs/journal.md, Takeover).
func (m *Handle) SealJournal(ctx context.Context) (*Snapshot, error) {
	var fencer journal.Header
	if _, err := rand.Read(fencer.Nonce[:]); err != nil {
		return nil, fmt.Errorf("manifest: random fence nonce: %w", err)
	}
	var id journal.ID
	first := true
	return m.Update(ctx, func(st *State) error {
		if st.Journal == nil || (!first && st.Journal.ID != id) {
			return ErrNoChange
		}
		if first {
			id, first = st.Journal.ID, false
		}
		fencer.WrittenAtMs = uint64(max(time.Now().UnixMilli(), 0))
		store := retryingReads{m.store, m.backoff}
		end, err := journal.Fence(ctx, store, id, st.Journal.From, fencer, func(h journal.Header, rows []journal.IndexRow) error {
			return foldWindow(ctx, store, m.path, st, h, rows)
		})
		if err != nil {
			return fmt.Errorf("manifest: seal journal %s of %s at %d: %w", id, m.path, end, err)
		}
		st.Journal = nil
		return nil
	})
}

// foldReadAttempts bounds the tries of one read of a journal object during a fold.
const foldReadAttempts = 5

// retryingReads is the store a fold reads windows through. A fold is many reads of
// immutable objects, and one failed read would throw the whole walk away: a read that fails
// plainly (not a missing object, nor a refusal of the store), or whose body fails, is tried
// again with backoff, up to foldReadAttempts times. Bodies are read whole before Get returns
// (window indexes and sections are small).
type retryingReads struct {
	objectstore.Store
	backoff Backoff
}

func (r retryingReads) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	for attempt := 1; ; attempt++ {
		obj, err := r.Store.Get(ctx, key, opts)
		if err == nil {
			var data []byte
			data, err = io.ReadAll(obj.Body)
			obj.Body.Close()
			if err == nil {
				obj.Body = io.NopCloser(bytes.NewReader(data))
				return obj, nil
			}
		}
		if errors.Is(err, objectstore.ErrNotFound) || objectstore.Refused(err) || attempt >= foldReadAttempts || ctx.Err() != nil {
			return nil, err
		}
		if r.backoff.Sleep(ctx, attempt-1) != nil {
			return nil, err
		}
	}
}
