package manifest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
)

const foldManifest = "s/manifest"

// simCommitter plays a journal committer for one stream: it applies commits to its own
// state and writes each as a window with the stream's delta.
type simCommitter struct {
	t        *testing.T
	id       journal.ID
	st       *State
	batchNum uint64
	payloads map[string][]byte // carried records, by window key
}

// newSim points the stream's manifest at journal id (from 0) and returns its committer.
func newSim(t *testing.T, m *Handle, id journal.ID) *simCommitter {
	t.Helper()
	snap, err := m.Update(context.Background(), func(s *State) error {
		s.Journal = &JournalPointer{ID: id}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := snap.State.Clone()
	st.OwnJournal(id)
	return &simCommitter{t: t, id: id, st: st, payloads: map[string][]byte{}}
}

// build commits one batch of n records in window number (carried in the window when
// carried) and returns the window's header and bytes, with extra sections before ours.
func (c *simCommitter) build(number uint64, carried bool, n int, extra ...journal.Section) (journal.Header, []byte) {
	c.t.Helper()
	wkey := journal.Key(c.id, number)
	prev, from := len(c.st.Entries), c.st.Tail.SeqNum
	c.batchNum++
	b := batch("p", c.batchNum, 100*c.batchNum, &batchfmt.AppendInput{Records: recs(n)})
	var payload []byte
	if carried {
		payload = bytes.Repeat([]byte{byte(number)}, 10+n)
		b.Key, b.ObjectBytes = wkey, uint64(len(payload))
		c.payloads[wkey] = payload
	}
	if _, err := c.st.Apply(b); err != nil {
		c.t.Fatal(err)
	}
	if carried {
		e := &c.st.Entries[len(c.st.Entries)-1]
		e.Offset, e.Length = 0, e.ObjectBytes
	}
	d := &Delta{Entries: append([]Entry(nil), c.st.Entries[prev:]...), Tail: c.st.Tail, FencingToken: c.st.FencingToken,
		TrimPoint: c.st.TrimPoint, Producers: map[string]ProducerState{"p": c.st.Producers["p"]}}
	sections := append(extra, journal.Section{Manifest: foldManifest, Generation: c.st.Generation, FirstSeq: from, NextSeq: c.st.Tail.SeqNum,
		Data: append(EncodeDelta(d, wkey), payload...)})
	h := journal.Header{Kind: journal.KindWindow, Journal: c.id, Number: number, Nonce: [16]byte{byte(number) + 1}}
	obj, err := journal.Encode(h, sections)
	if err != nil {
		c.t.Fatal(err)
	}
	return h, obj
}

// commit builds window number (see build) and writes it.
func (c *simCommitter) commit(store objectstore.Store, number uint64, carried bool, n int, extra ...journal.Section) {
	c.t.Helper()
	h, obj := c.build(number, carried, n, extra...)
	c.write(store, h, obj)
}

func (c *simCommitter) write(store objectstore.Store, h journal.Header, obj []byte) {
	c.t.Helper()
	if err := journal.Write(context.Background(), store, h, obj); err != nil {
		c.t.Fatal(err)
	}
}

// checkView checks that view shows exactly the committer's commits: tail, token, producer
// row and entries, each carried entry's range holding its records in the window.
func (c *simCommitter) checkView(store objectstore.Store, view *State, tail uint64) {
	c.t.Helper()
	if view.Tail.SeqNum != tail || view.Producers["p"].LastBatch == 0 {
		c.t.Fatalf("view at tail %d (producer %+v), want %d", view.Tail.SeqNum, view.Producers["p"], tail)
	}
	var next uint64
	for _, e := range view.Entries {
		if e.FirstSeq != next {
			c.t.Fatalf("entry %q starts at %d, want %d", e.Key, e.FirstSeq, next)
		}
		next = e.EndSeq()
		if !e.Ranged() {
			continue
		}
		obj, err := store.Get(context.Background(), e.Key, objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: int64(e.Offset), Length: int64(e.Length)}})
		if err != nil {
			c.t.Fatal(err)
		}
		got, _ := io.ReadAll(obj.Body)
		obj.Body.Close()
		if !bytes.Equal(got, c.payloads[e.Key]) {
			c.t.Fatalf("entry in %s: range [%d,+%d) holds %x, want %x", e.Key, e.Offset, e.Length, got, c.payloads[e.Key])
		}
	}
	if next != tail {
		c.t.Fatalf("entries end at %d, tail %d", next, tail)
	}
}

func newFoldStream(t *testing.T, store objectstore.Store) *Handle {
	t.Helper()
	m := Open(store, foldManifest, WithBackoff(Backoff{Initial: time.Microsecond, Max: time.Millisecond, Multiplier: 2}))
	if _, err := m.Create(context.Background(), DefaultConfig(), time.UnixMilli(1000)); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFoldJournalStopsAtGapAndFence: a fold takes the windows up to the first missing
// number (a later window waits), grows when the gap fills, and stops for good at a fence.
func TestFoldJournalStopsAtGapAndFence(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := newFoldStream(t, store)
	c := newSim(t, m, 0xab)
	c.commit(store, 0, false, 2)
	c.commit(store, 1, true, 3)
	h2, w2 := c.build(2, true, 1)
	c.commit(store, 3, false, 4)

	snap, view, err := m.LoadView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Journal.From != 0 || snap.State.Tail.SeqNum != 0 || view.Journal.From != 2 {
		t.Fatalf("snapshot from %d tail %d, view from %d; want 0, 0, 2", snap.State.Journal.From, snap.State.Tail.SeqNum, view.Journal.From)
	}
	c.checkView(store, view, 5)

	c.write(store, h2, w2)
	st := snap.State.Clone()
	end, fenced, err := FoldJournal(ctx, store, foldManifest, st)
	if err != nil || end != 4 || fenced || st.Journal.From != 4 {
		t.Fatalf("fold after the gap filled: end %d fenced %v err %v from %d", end, fenced, err, st.Journal.From)
	}
	c.checkView(store, st, 10)

	if k, err := journal.Fence(ctx, store, c.id, 0, journal.Header{Nonce: [16]byte{9}}, nil); err != nil || k != 4 {
		t.Fatalf("fence at %d: %v", k, err)
	}
	end, fenced, err = FoldJournal(ctx, store, foldManifest, st)
	if err != nil || end != 4 || !fenced {
		t.Fatalf("fold at the fence: end %d fenced %v err %v", end, fenced, err)
	}
	c.checkView(store, st, 10)
}

// TestFoldJournalSkipsOtherStreams: sections of the same manifest key in another
// generation (a deleted and re-created stream), and of other streams, are not applied
// (their bytes here are not even deltas).
func TestFoldJournalSkipsOtherStreams(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := newFoldStream(t, store)
	c := newSim(t, m, 0xcd)
	otherGen := c.st.Generation
	otherGen[0] ^= 1
	c.commit(store, 0, true, 2,
		journal.Section{Manifest: foldManifest, Generation: otherGen, FirstSeq: 0, NextSeq: 9, Data: []byte("old generation")},
		journal.Section{Manifest: "t/manifest", Generation: c.st.Generation, FirstSeq: 0, NextSeq: 1, Data: []byte("other stream")})
	_, view, err := m.LoadView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.checkView(store, view, 2)
	if view.Journal.From != 1 {
		t.Fatalf("from %d, want 1", view.Journal.From)
	}
}

// TestFoldJournalRefusesAGap: a window whose section does not start at the tail the fold
// reached (a lost window's commits are missing) is corruption, not skipped; the fold keeps
// the windows before it and stops there.
func TestFoldJournalRefusesAGap(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := newFoldStream(t, store)
	c := newSim(t, m, 0xef)
	c.commit(store, 0, false, 2)
	c.build(1, false, 3) // lost: never written
	c.commit(store, 1, false, 1)
	if _, _, err := m.LoadView(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("LoadView over a gap: %v, want ErrCorrupt", err)
	}
	snap, err := m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := snap.State.Clone()
	end, _, err := FoldJournal(ctx, store, foldManifest, st)
	if !errors.Is(err, ErrCorrupt) || end != 1 || st.Journal.From != 1 || st.Tail.SeqNum != 2 {
		t.Fatalf("fold: end %d, from %d, tail %d, err %v", end, st.Journal.From, st.Tail.SeqNum, err)
	}
}

// hookStore runs a function once before the first Put that matches.
type hookStore struct {
	objectstore.Store
	mu    sync.Mutex
	match func(key string, cond objectstore.PutCondition) bool
	hook  func()
}

func (s *hookStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.mu.Lock()
	var hook func()
	if s.hook != nil && s.match(key, cond) {
		hook, s.hook = s.hook, nil
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// TestSealJournal: sealing fences the journal past a window the committer lands just
// before the fence (the fold includes it), retries past a consumer's manifest write that
// lands between its read and its write (keeping the consumer's change), clears the pointer
// and leaves the role; the committer's next window is fenced; the sealed state applies.
func TestSealJournal(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	m := newFoldStream(t, mem)
	if _, err := m.Update(ctx, func(s *State) error { return s.TakeRole("c1", "http://c1", time.Now(), time.Minute) }); err != nil {
		t.Fatal(err)
	}
	c := newSim(t, m, 0x42)
	c.commit(mem, 0, true, 2)
	c.commit(mem, 1, false, 1)
	h2, w2 := c.build(2, true, 3)
	h3, w3 := c.build(3, false, 1) // the committer's next window, after the seal

	fenceAt2 := &hookStore{Store: mem,
		match: func(key string, cond objectstore.PutCondition) bool {
			return key == journal.Key(c.id, 2) && cond.IfAbsent
		},
		hook: func() { c.write(mem, h2, w2) }}
	consumer := &hookStore{Store: fenceAt2,
		match: func(key string, cond objectstore.PutCondition) bool { return key == foldManifest && cond.IfMatch != "" },
		hook: func() {
			if _, err := Open(mem, foldManifest).Update(ctx, func(s *State) error { s.OpenGroup("g"); return nil }); err != nil {
				t.Error(err)
			}
		}}
	sealed, err := Open(consumer, foldManifest, WithBackoff(Backoff{Initial: time.Microsecond, Max: time.Millisecond, Multiplier: 2})).SealJournal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fenceAt2.hook != nil || consumer.hook != nil {
		t.Fatal("a race the test meant to stage did not happen")
	}
	st := sealed.State
	if st.Journal != nil || st.Committer.ID != "c1" {
		t.Fatalf("sealed: pointer %+v, role %+v; want none, c1", st.Journal, st.Committer)
	}
	if _, ok := st.Groups["g"]; !ok {
		t.Fatal("the consumer's write was lost")
	}
	c.checkView(mem, st, 6)
	if h, _, err := journal.ReadIndex(ctx, mem, journal.Key(c.id, 3)); err != nil || h.Kind != journal.KindFence {
		t.Fatalf("object 3: %+v %v, want the fence", h, err)
	}
	if err := journal.Write(ctx, mem, h3, w3); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("the committer's window after the seal: %v, want ErrFenced", err)
	}
	loaded, err := m.Load(ctx)
	if err != nil || loaded.Version != sealed.Version {
		t.Fatalf("load after seal: %v (version %q, sealed %q)", err, loaded.Version, sealed.Version)
	}
	again, err := m.SealJournal(ctx)
	if err != nil || again.Version != sealed.Version {
		t.Fatalf("sealing a sealed stream: %v (version %q, want %q unchanged)", err, again.Version, sealed.Version)
	}
	if _, err := loaded.State.Apply(batch("q", 1, 5, &batchfmt.AppendInput{Records: recs(1)})); err != nil {
		t.Fatalf("Apply after the seal: %v", err)
	}
}

// TestSealJournalLeavesAnotherJournal: a seal that finds, after a conflict, that the
// manifest names another journal returns it as is, without fencing that journal.
func TestSealJournalLeavesAnotherJournal(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	m := newFoldStream(t, mem)
	c := newSim(t, m, 0x51)
	c.commit(mem, 0, false, 1)
	swap := &hookStore{Store: mem,
		match: func(key string, cond objectstore.PutCondition) bool { return key == foldManifest && cond.IfMatch != "" },
		hook: func() {
			if _, err := Open(mem, foldManifest).Update(ctx, func(s *State) error {
				s.Journal = &JournalPointer{ID: 0x52, From: 0}
				return nil
			}); err != nil {
				t.Error(err)
			}
		}}
	got, err := Open(swap, foldManifest, WithBackoff(Backoff{Initial: time.Microsecond, Max: time.Millisecond, Multiplier: 2})).SealJournal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.State.Journal == nil || got.State.Journal.ID != 0x52 {
		t.Fatalf("pointer %+v, want journal 52 as is", got.State.Journal)
	}
	var keys []string
	if err := objectstore.ListAll(ctx, mem, journal.Prefix(0x52), func(o objectstore.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("the other journal was touched: %v", keys)
	}
}
