package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/journaltest"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// rangeStore records the Gets of journal objects, to check that readers fetch ranges of them.
type rangeStore struct {
	objectstore.Store
	mu           sync.Mutex
	journalGets  int
	wholeWindows []string // journal keys read without a range
}

func (s *rangeStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if _, _, ok := journal.ParseKey(key); ok {
		s.mu.Lock()
		s.journalGets++
		if opts.Range == nil {
			s.wholeWindows = append(s.wholeWindows, key)
		}
		s.mu.Unlock()
	}
	return s.Store.Get(ctx, key, opts)
}

func journalReader(t *testing.T, store objectstore.Store, mod func(*Config)) *Reader {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ObjectStore = store
	if mod != nil {
		mod(&cfg)
	}
	r, err := NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantOf(recs []journaltest.Rec) []wantRec {
	out := make([]wantRec, len(recs))
	for i, r := range recs {
		out[i] = wantRec{seq: r.Seq, ts: r.TS, body: r.Body}
	}
	return out
}

// checkJournal compares records with what the journal'd stream committed (bodies carry no
// headers, unlike check's records).
func checkJournal(t *testing.T, what string, got []SequencedRecord, want []journaltest.Rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := &got[i], &want[i]
		if g.SeqNum != w.Seq || g.Timestamp != w.TS || string(g.Body) != w.Body {
			t.Fatalf("%s: record %d is (%d, %d, %q), want (%d, %d, %q)", what, i, g.SeqNum, g.Timestamp, g.Body, w.Seq, w.TS, w.Body)
		}
	}
}

// TestJournalReadSeesManifestAndWindows: a reader reads every committed record of a stream
// whose commits are in its manifest (whole objects), in windows the manifest does not show
// (ranged and whole entries mixed), and in windows a checkpoint folded into the manifest;
// it fetches only ranges of windows, and its tail counts the windows.
func TestJournalReadSeesManifestAndWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 0))
	ctx := context.Background()
	store := &rangeStore{Store: objectstore.NewMemStore()}
	s := journaltest.New(t, store, DefaultConfig().Stream.ManifestKey(), journal.ID(rng.Uint64()))
	s.Direct([]string{"d0", "d1"}, []string{"d2"})
	for w := range 4 {
		s.Window(journaltest.RandomBatches(rng, fmt.Sprintf("w%d", w))...)
	}
	s.Window(journaltest.Batch{Bodies: []string{"carried"}}, journaltest.Batch{Bodies: []string{"whole"}, Whole: true})
	s.Checkpoint(false)
	for w := 5; w < 9; w++ {
		s.Window(journaltest.RandomBatches(rng, fmt.Sprintf("w%d", w))...)
	}
	s.Window() // a window with an empty section
	r := journalReader(t, store, nil)
	tail, err := r.CheckTail(ctx)
	if err != nil || tail != s.Full.Tail {
		t.Fatalf("CheckTail = %+v, %v; want %+v", tail, err, s.Full.Tail)
	}
	got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, "read from 0", got, s.Want)
	mid := uint64(len(s.Want) / 2)
	got, err = r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(mid)})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, fmt.Sprintf("read from %d", mid), got, s.Want[mid:])
	if len(store.wholeWindows) > 0 || store.journalGets == 0 {
		t.Fatalf("%d journal Gets, of them whole windows: %q", store.journalGets, store.wholeWindows)
	}
}

// TestJournalFollowSeesNewWindowsOnce: a follower, polling itself or through a shared
// watcher, sees the records of every new window once, in order, through checkpoints that
// fold windows into the manifest (one of them removing the pointer), with nothing skipped
// or repeated.
func TestJournalFollowSeesNewWindowsOnce(t *testing.T) {
	t.Run("poll", func(t *testing.T) { testJournalFollow(t, nil) })
	t.Run("watch", func(t *testing.T) {
		cfg := watch.DefaultConfig()
		cfg.MinInterval, cfg.MaxInterval = time.Millisecond, 5*time.Millisecond
		hub, err := watch.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer hub.Close()
		testJournalFollow(t, hub)
	})
}

func testJournalFollow(t *testing.T, hub *watch.Hub) {
	rng := rand.New(rand.NewPCG(seed(t), 0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := objectstore.NewMemStore()
	s := journaltest.New(t, store, DefaultConfig().Stream.ManifestKey(), journal.ID(rng.Uint64()))
	s.Window(journaltest.RandomBatches(rng, "w0")...)
	r := journalReader(t, store, func(c *Config) { c.PollInterval, c.Watch = time.Millisecond, hub })
	sess, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0), Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, errc := collect(ctx, sess)
	var got []SequencedRecord
	for w := 1; w <= 12; w++ {
		got = append(got, await(t, out, errc, len(s.Want)-len(got))...)
		checkJournal(t, fmt.Sprintf("after window %d", w-1), got, s.Want)
		s.Window(journaltest.RandomBatches(rng, fmt.Sprintf("w%d", w))...)
		switch w % 4 {
		case 0:
			s.Checkpoint(false) // mid-follow: the view must not change
		case 2:
			s.CheckpointBefore(s.Next - 1) // the last window stays in the journal only
		}
	}
	got = append(got, await(t, out, errc, len(s.Want)-len(got))...)
	s.Checkpoint(true)
	s.Direct([]string{"direct after the journal"})
	got = append(got, await(t, out, errc, len(s.Want)-len(got))...)
	checkJournal(t, "at the end", got, s.Want)
}

// TestJournalFenceEndsWalk: a fence ends the stream's journal; a window past it (a zombie's)
// is never read.
func TestJournalFenceEndsWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 0))
	ctx := context.Background()
	store := objectstore.NewMemStore()
	s := journaltest.New(t, store, DefaultConfig().Stream.ManifestKey(), journal.ID(rng.Uint64()))
	s.Window(journaltest.Batch{Bodies: []string{"a", "b"}})
	want, tail := append([]journaltest.Rec(nil), s.Want...), s.Full.Tail
	s.Fence()
	// A window at the number after the fence, as a zombie committer would try to write.
	s.Window(journaltest.Batch{Bodies: []string{"after the fence"}})
	r := journalReader(t, store, nil)
	if got, err := r.CheckTail(ctx); err != nil || got != tail {
		t.Fatalf("CheckTail = %+v, %v; want %+v", got, err, tail)
	}
	got, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	checkJournal(t, "read", got, want)
}

// TestJournalCorruptSectionFails: a window whose section does not match its checksum is a
// corruption error for readers, never a silent skip; so is a ranged entry the store cannot
// return in full.
func TestJournalCorruptSectionFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 0))
	ctx := context.Background()
	store := objectstore.NewMemStore()
	s := journaltest.New(t, store, DefaultConfig().Stream.ManifestKey(), journal.ID(rng.Uint64()))
	s.Window(journaltest.Batch{Bodies: []string{"a"}})
	s.Window(journaltest.Batch{Bodies: []string{"b", "c"}})
	key := journal.Key(s.ID, 1)
	data, _, err := objectstore.ReadAll(ctx, store, key)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 0xff // inside the last section: this stream's carried records
	if _, err := objectstore.PutBytes(ctx, store, key, data, objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	r := journalReader(t, store, nil)
	if _, err := r.CheckTail(ctx); !errors.Is(err, manifest.ErrCorrupt) || !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("CheckTail = %v, want a journal corruption", err)
	}
	if _, err := r.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0)}); !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("ReadAll = %v, want a corruption", err)
	}

	// A checkpoint folded window 0 (before the damage) and 1 into the manifest as ranged
	// entries: the damaged bytes are now a batch object read by its range.
	s2 := journaltest.New(t, store, "other/manifest", journal.ID(rng.Uint64()))
	s2.Window(journaltest.Batch{Bodies: []string{"x", "y"}})
	s2.Checkpoint(true)
	wkey := journal.Key(s2.ID, 0)
	wdata, _, err := objectstore.ReadAll(ctx, store, wkey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, store, wkey, wdata[:len(wdata)-5], objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	r2 := journalReader(t, store, func(c *Config) { c.Stream = stream.MustNew("other/manifest", "other/data") })
	_, err = r2.ReadAll(ctx, ReadRequest{Start: AtSeqNum(0)})
	var oe *ObjectError
	if !errors.As(err, &oe) || !errors.Is(err, ErrCorrupt) || oe.Key != wkey {
		t.Fatalf("reading a short range: %v, want a corrupt object %s", err, wkey)
	}
}
