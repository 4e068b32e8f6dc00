// Package journaltest builds journal'd streams by hand in a store, for readers' tests: a
// manifest, batch objects it names directly, commit windows whose sections hold the delta
// (manifest.EncodeDelta) and the batch objects they carry, checkpoints that fold windows
// into the manifest, and fences. Stream.Want lists every committed record with its
// position, as every reader must see it.
package journaltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Rec is a committed record as a reader must see it.
type Rec struct {
	Seq, TS uint64
	Body    string
}

// Stream is one journal'd stream being built.
type Stream struct {
	t     testing.TB
	Store objectstore.Store
	Key   string // the manifest key
	H     *manifest.Handle
	ID    journal.ID
	Next  uint64 // the next window number
	Want  []Rec  // every committed record, in seq_num order

	// Full is the stream's state with every window folded in (what a reader's view must
	// match); Manifest is what the manifest object holds, at Version.
	Full     *manifest.State
	Manifest *manifest.State
	Version  string

	objects int
	arrival uint64
	fenced  bool
	folded  map[uint64]*manifest.State // Full as it was before window n
}

// New creates the stream at key with its manifest pointing at journal id from window 0.
func New(t testing.TB, store objectstore.Store, key string, id journal.ID) *Stream {
	t.Helper()
	h := manifest.Open(store, key)
	snap, err := h.Create(context.Background(), manifest.DefaultConfig(), time.UnixMilli(1_700_000_000_000))
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	s := &Stream{t: t, Store: store, Key: key, H: h, ID: id, Manifest: snap.State, Version: snap.Version,
		arrival: 1_700_000_000_000}
	st := snap.State.Clone()
	st.Journal = &manifest.JournalPointer{ID: id}
	s.write(st)
	s.Full = s.Manifest.Clone()
	s.folded = map[uint64]*manifest.State{0: s.Full.Clone()}
	return s
}

func (s *Stream) write(st *manifest.State) {
	s.t.Helper()
	res, err := s.H.Write(context.Background(), st, s.Version)
	if err != nil {
		s.t.Fatalf("write manifest %s: %v", s.Key, err)
	}
	s.Manifest, s.Version = res.State.Clone(), res.Version
}

// Batch is one batch object of a commit: its records' bodies, and whether the window
// carries it (a ranged entry into the window) or it is an object of its own.
type Batch struct {
	Bodies []string
	Whole  bool
}

// RandomBatches returns 1 to 3 batches of 1 to 4 records, carried or whole at random.
func RandomBatches(rng *rand.Rand, tag string) []Batch {
	var out []Batch
	for b := range 1 + rng.IntN(3) {
		var bodies []string
		for r := range 1 + rng.IntN(4) {
			bodies = append(bodies, fmt.Sprintf("%s-b%d-r%d", tag, b, r))
		}
		out = append(out, Batch{Bodies: bodies, Whole: rng.IntN(3) == 0})
	}
	return out
}

// encode builds one batch object of a single append holding bodies (no client timestamps:
// each record takes the entry's arrival time).
func encode(t testing.TB, bodies []string) []byte {
	t.Helper()
	recs := make([]batchfmt.Record, len(bodies))
	for i, b := range bodies {
		recs[i] = batchfmt.Record{Body: []byte(b)}
	}
	enc := batchfmt.NewEncoder(batchfmt.CompressionNone)
	enc.Add(&batchfmt.AppendInput{Records: recs})
	obj, err := enc.Finish()
	if err != nil {
		t.Fatalf("encode batch: %v", err)
	}
	return append([]byte(nil), obj...)
}

// entry is the committed entry of an object of bodies at the tail of st, and records what a
// reader must see of it.
func (s *Stream) entry(st *manifest.State, key string, obj []byte, bodies []string) manifest.Entry {
	s.arrival += 10
	metered := 0
	for _, b := range bodies {
		r := batchfmt.Record{Body: []byte(b)}
		metered += r.MeteredSize()
	}
	ts := max(s.arrival, st.Tail.Timestamp)
	e := manifest.Entry{Key: key, FirstSeq: st.Tail.SeqNum, Records: uint64(len(bodies)), MeteredBytes: uint64(metered),
		ObjectBytes: uint64(len(obj)), MinTS: ts, MaxTS: ts, Floor: st.Tail.Timestamp, Arrival: s.arrival, Appends: 1}
	for i, b := range bodies {
		s.Want = append(s.Want, Rec{Seq: e.FirstSeq + uint64(i), TS: ts, Body: b})
	}
	st.Tail = manifest.Position{SeqNum: e.EndSeq(), Timestamp: ts}
	return e
}

func (s *Stream) putObject(obj []byte) string {
	s.t.Helper()
	s.objects++
	key := fmt.Sprintf("%s-objects/%06d", s.Key, s.objects)
	if _, err := objectstore.PutBytes(context.Background(), s.Store, key, obj, objectstore.IfAbsent()); err != nil {
		s.t.Fatalf("put %s: %v", key, err)
	}
	return key
}

// Window writes the next window of the journal, with this stream's section holding batches
// (and a section of another stream before it, which readers of this one must skip). After
// Fence it writes what a zombie committer would: a window past the fence, which is not part
// of the stream (Want and Full leave it out).
func (s *Stream) Window(batches ...Batch) {
	s.t.Helper()
	wants := len(s.Want)
	key := journal.Key(s.ID, s.Next)
	d := &manifest.Delta{Tail: s.Full.Tail, FencingToken: s.Full.FencingToken, TrimPoint: s.Full.TrimPoint}
	first := s.Full.Tail.SeqNum
	var carried []byte
	for _, b := range batches {
		obj := encode(s.t, b.Bodies)
		tail := manifest.State{Tail: d.Tail}
		var e manifest.Entry
		if b.Whole {
			e = s.entry(&tail, s.putObject(obj), obj, b.Bodies)
		} else {
			e = s.entry(&tail, key, obj, b.Bodies)
			e.Offset, e.Length = uint64(len(carried)), uint64(len(obj))
			carried = append(carried, obj...)
		}
		d.Entries = append(d.Entries, e)
		d.Tail = tail.Tail
	}
	data := append(manifest.EncodeDelta(d, key), carried...)
	other := manifest.EncodeDelta(&manifest.Delta{}, key)
	sections := []journal.Section{
		{Manifest: s.Key + "-other", Generation: s.Full.Generation, Data: other},
		{Manifest: s.Key, Generation: s.Full.Generation, FirstSeq: first, NextSeq: d.Tail.SeqNum, Data: data},
	}
	s.put(journal.Header{Kind: journal.KindWindow, Journal: s.ID, Number: s.Next}, sections)
	if s.fenced {
		s.Want = s.Want[:wants]
		return
	}
	// Fold it into Full the way a reader does: from the window's own bytes.
	if _, _, err := manifest.FoldJournal(context.Background(), s.Store, s.Key, s.Full); err != nil {
		s.t.Fatalf("fold window %s: %v", key, err)
	}
	if s.Full.Tail != d.Tail {
		s.t.Fatalf("window %s folds to tail %+v, want %+v", key, s.Full.Tail, d.Tail)
	}
	s.folded[s.Next] = s.Full.Clone()
}

func (s *Stream) put(h journal.Header, sections []journal.Section) {
	s.t.Helper()
	h.WrittenAtMs = s.arrival
	h.Nonce[0] = byte(s.Next) + 1
	obj, err := journal.Encode(h, sections)
	if err != nil {
		s.t.Fatalf("encode window %d: %v", h.Number, err)
	}
	if err := journal.Write(context.Background(), s.Store, h, obj); err != nil {
		s.t.Fatalf("write window %d: %v", h.Number, err)
	}
	s.Next++
}

// Fence closes the journal at its next number.
func (s *Stream) Fence() {
	s.t.Helper()
	s.put(journal.Header{Kind: journal.KindFence, Journal: s.ID, Number: s.Next}, nil)
	s.fenced = true
}

// Direct commits batches of bodies as whole objects straight into the manifest (a stream
// with no journal pointer, or before the first window).
func (s *Stream) Direct(batches ...[]string) {
	s.t.Helper()
	st := s.Manifest.Clone()
	if st.Journal != nil && s.Full.Tail != st.Tail {
		s.t.Fatalf("a direct commit on a stream with unfolded windows")
	}
	for _, bodies := range batches {
		obj := encode(s.t, bodies)
		st.Entries = append(st.Entries, s.entry(st, s.putObject(obj), obj, bodies))
	}
	s.write(st)
	s.Full = s.Manifest.Clone()
	s.folded[s.Next] = s.Full.Clone()
}

// Checkpoint folds every window written so far into the manifest and moves its pointer
// past them, as a committer's checkpoint does; drop also removes the pointer.
func (s *Stream) Checkpoint(drop bool) {
	s.t.Helper()
	s.checkpoint(s.Full, drop)
}

// CheckpointBefore folds the windows below n into the manifest and moves its pointer to n:
// the windows from n on stay unfolded.
func (s *Stream) CheckpointBefore(n uint64) {
	s.t.Helper()
	st, ok := s.folded[n]
	if !ok {
		s.t.Fatalf("no window %d to checkpoint before", n)
	}
	s.checkpoint(st, false)
}

func (s *Stream) checkpoint(full *manifest.State, drop bool) {
	s.t.Helper()
	st := full.Clone()
	st.WriteCounter, st.RecentWrites = s.Manifest.WriteCounter, s.Manifest.RecentWrites
	if drop {
		st.Journal = nil
	}
	s.write(st)
	if drop {
		s.Full.Journal = nil
	}
}
