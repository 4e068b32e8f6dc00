package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/journaltest"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/watch"
)

// sectionOf reads window n's section of the stream (uncounted), as its committer published it.
func sectionOf(t *testing.T, s *journaltest.Stream, store objectstore.Store, n uint64) *manifest.Delta {
	t.Helper()
	ctx := context.Background()
	wkey := journal.Key(s.ID, n)
	_, rows, err := journal.ReadIndex(ctx, store, wkey)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row.Manifest == s.Key {
			data, err := journal.ReadSection(ctx, store, wkey, row)
			if err != nil {
				t.Fatal(err)
			}
			d, _, err := manifest.DecodeDelta(wkey, data, row.Offset)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("window %d has no section of %s", n, s.Key)
	return nil
}

// TestPublishedWindowsFoldWithoutReads: a window's section handed to the hub is folded into
// the followers' view with no store request; a section that does not start where the view
// ends (one before it was never handed over) is not taken: the watcher polls and folds both.
func TestPublishedWindowsFoldWithoutReads(t *testing.T) {
	hub := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
	base := objectstore.NewMemStore()
	counted := &keyCounter{Store: base, gets: map[string]int{}}
	s := journaltest.New(t, base, key, journal.ID(0xab))
	s.Window(journaltest.Batch{Bodies: []string{"a0", "a1"}})
	sub := subscribe(t, hub, counted)
	defer sub.Close()
	known := waitTail(t, sub, nil, s.Full.Tail) // the first poll folds window 0

	s.Window(journaltest.Batch{Bodies: []string{"b0"}})
	before := counted.snapshot()
	hub.PublishWindow(counted, key, s.Full.Generation, s.ID, 1, sectionOf(t, s, base, 1))
	known = waitTail(t, sub, known, s.Full.Tail)
	if after := counted.snapshot(); len(after) != len(before) || after[key] != before[key] {
		t.Fatalf("store reads while folding a published window: before %v, after %v", before, after)
	}
	if known.State.Journal.From != 2 {
		t.Fatalf("the view's journal pointer is at %d after window 1, want 2", known.State.Journal.From)
	}

	s.Window(journaltest.Batch{Bodies: []string{"c0"}}) // window 2: never handed over
	s.Window(journaltest.Batch{Bodies: []string{"d0", "d1"}})
	hub.PublishWindow(counted, key, s.Full.Generation, s.ID, 3, sectionOf(t, s, base, 3))
	known = waitTail(t, sub, known, s.Full.Tail)
	if got := counted.snapshot()[key]; got <= before[key] {
		t.Fatal("a window published after a lost one was taken without a poll")
	}
	if len(known.State.Entries) != len(s.Full.Entries) {
		t.Fatalf("the view holds %d entries, the stream %d", len(known.State.Entries), len(s.Full.Entries))
	}
}
