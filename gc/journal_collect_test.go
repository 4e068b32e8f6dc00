package gc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/journaltest"
	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// TestRoundCollectsOnlyUnreferencedJournalWindows: a round of Run deletes the old journal
// windows no stream references any more (folded into the manifest, their records in objects
// of their own), keeps those a manifest's pointer or ranged entries still need, keeps
// fences, and deletes nothing when a stream's pass failed; the stream reads the same after.
func TestRoundCollectsOnlyUnreferencedJournalWindows(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	const key = "s/manifest"
	js := journaltest.New(t, store, key, journal.ID(0x5eed))
	js.Window(journaltest.Batch{Bodies: []string{"a0", "a1"}})        // 0: carried
	js.Window(journaltest.Batch{Bodies: []string{"b0"}, Whole: true}) // 1: an object of its own
	js.Window(journaltest.Batch{Bodies: []string{"c0", "c1", "c2"}})  // 2: carried
	js.Window(journaltest.Batch{Bodies: []string{"d0"}, Whole: true}) // 3: an object of its own
	st := stream.MustNew(key, "s/data")
	cfg := DefaultConfig()
	cfg.GracePeriod, cfg.CommitDeadline, cfg.ProbeReuse = 50*time.Millisecond, 25*time.Millisecond, 0
	c, err := NewCollector(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	streams := []stream.Stream{st}
	r := &Runner{c: c, list: func(context.Context) ([]stream.Stream, error) { return streams, nil }}
	exists := func(n uint64) bool {
		_, err := store.Head(ctx, journal.Key(js.ID, n))
		if err != nil && !errors.Is(err, objectstore.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	time.Sleep(100 * time.Millisecond) // every window is past the grace period

	// The pointer names the journal from window 0: every window is still to be folded.
	r.round(ctx)
	for n := uint64(0); n < 4; n++ {
		if !exists(n) {
			t.Fatalf("window %d deleted while the manifest's pointer names it", n)
		}
	}

	// Windows 0..2 folded in: 0 and 2 hold ranged entries' records, 1 nothing any more; 3
	// is still to be folded.
	js.CheckpointBefore(3)
	r.round(ctx)
	for n, want := range []bool{true, false, true, true} {
		if exists(uint64(n)) != want {
			t.Fatalf("after a checkpoint before window 3: window %d exists %v, want %v", n, !want, want)
		}
	}

	// A failed pass (an unknown stream's listing is fine; a manifest that cannot be read is
	// not): nothing goes.
	js.Checkpoint(true) // every window folded, pointer gone: window 3 is unreferenced now
	streams = []stream.Stream{st, stream.MustNew("broken/manifest", "broken/data")}
	if _, err := objectstore.PutBytes(ctx, store, "broken/manifest", []byte("not a manifest"), objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	r.round(ctx)
	if !exists(3) {
		t.Fatal("a window deleted in a round whose passes did not all read their stream")
	}
	streams = []stream.Stream{st}
	js.Fence()
	time.Sleep(100 * time.Millisecond)
	r.round(ctx)
	if exists(3) {
		t.Fatal("an unreferenced old window was kept")
	}
	if !exists(0) || !exists(2) {
		t.Fatal("a window holding ranged entries' records was deleted")
	}
	if !exists(4) {
		t.Fatal("the journal's fence was deleted")
	}
	recs, _, _, err := streamcheck.Read(ctx, store, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(js.Want) {
		t.Fatalf("the stream reads %d records after collection, %d were committed", len(recs), len(js.Want))
	}
}
