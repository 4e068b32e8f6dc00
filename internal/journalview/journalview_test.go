package journalview

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-dev/sluice/internal/journaltest"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestNewerOrdersViews: a later manifest is newer whatever its fold; the same manifest is
// newer folded further into the same journal; another generation is never newer.
func TestNewerOrdersViews(t *testing.T) {
	at := func(counter, from uint64) *manifest.State {
		return &manifest.State{WriteCounter: counter, Journal: &manifest.JournalPointer{ID: 7, From: from}}
	}
	cases := []struct {
		a, b *manifest.State
		want bool
	}{
		{at(2, 0), at(1, 9), true},
		{at(1, 9), at(2, 0), false},
		{at(1, 4), at(1, 3), true},
		{at(1, 3), at(1, 3), false},
		{at(1, 3), &manifest.State{WriteCounter: 1}, false},
		{&manifest.State{WriteCounter: 3}, at(2, 5), true},
		{&manifest.State{WriteCounter: 3, Generation: [16]byte{1}}, at(2, 5), false},
	}
	for i, c := range cases {
		if got := Newer(c.a, c.b); got != c.want {
			t.Errorf("case %d: Newer = %v, want %v", i, got, c.want)
		}
	}
}

// TestRefoldStopsAtGapAndFence: Refold returns nil while no window follows the view, the
// view folded further once one lands, and nil again once a fence closes the journal.
func TestRefoldStopsAtGapAndFence(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	s := journaltest.New(t, store, "s/manifest", journal.ID(42))
	s.Window(journaltest.Batch{Bodies: []string{"a"}})
	view := s.Manifest.Clone()
	if err := Fold(ctx, store, s.Key, view); err != nil || view.Tail != s.Full.Tail {
		t.Fatalf("Fold: tail %+v, %v; want %+v", view.Tail, err, s.Full.Tail)
	}
	if st, err := Refold(ctx, store, s.Key, view); st != nil || err != nil {
		t.Fatalf("Refold with nothing new = %+v, %v", st, err)
	}
	s.Window(journaltest.Batch{Bodies: []string{"b", "c"}})
	st, err := Refold(ctx, store, s.Key, view)
	if err != nil || st == nil || st.Tail != s.Full.Tail || st.Journal.From != 2 || view.Journal.From != 1 {
		t.Fatalf("Refold after a window = %+v, %v (known now at %d)", st, err, view.Journal.From)
	}
	s.Fence()
	s.Window(journaltest.Batch{Bodies: []string{"zombie"}})
	if got, err := Refold(ctx, store, s.Key, st); got != nil || err != nil {
		t.Fatalf("Refold at a fence = %+v, %v", got, err)
	}
	// A window that does not continue the stream is corruption, for every caller.
	bad := st.Clone()
	bad.Journal.From = 0
	if err := Fold(ctx, store, s.Key, bad); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("Fold of windows already in the state = %v, want ErrCorrupt", err)
	}
}
