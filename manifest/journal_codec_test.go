package manifest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
)

// goldenState is a fixed state whose version 1 and 2 encodings (and its segment's) were
// produced by the encoder before journal pointers and ranged entries existed.
func goldenState() *State {
	s := &State{Generation: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, CreatedMs: 1000, Config: DefaultConfig(), Groups: map[string]Group{}, Producers: map[string]ProducerState{}}
	s.Apply(&Batch{Key: "ingest/a", ObjectBytes: 100, ProducerID: "p", BatchNum: 1, ArrivalMs: 10, Appends: []*batchfmt.AppendInput{{Records: recs(3, 1, 2, 3)}, {Records: recs(1), MatchSeqNum: u64(9)}}})
	s.OpenGroup("g")
	s.RecentWrites = [][8]byte{{1, 2, 3, 4, 5, 6, 7, 8}}
	s.WriteCounter = 3
	return s
}

const (
	goldenV1  = "534c4d46010102030405060708090a0b0c0d0e0f1003010102030405060708e80703030000000001000000000101670100010170010a000108696e676573742f6100031e640103000a000001700102010101030075ca687b"
	goldenV2  = "534c4d46020102030405060708090a0b0c0d0e0f1003010102030405060708e80703030000000001000000000101670100010170010a000108696e676573742f6100031e640103000a0000017001020101010300016308687474703a2f2f63f02e45b085ae"
	goldenSeg = "534c534701000102030405060708090a0b0c0d0e0f100108696e676573742f6100031e640103000a000001700102010101030090f8512c"
)

// TestOldVersionsByteIdentical: a manifest without a journal pointer or ranged entry, and a
// segment without ranged entries, encode exactly as before version 3 existed.
func TestOldVersionsByteIdentical(t *testing.T) {
	s := goldenState()
	if got := hex.EncodeToString(s.Encode()); got != goldenV1 {
		t.Fatalf("version 1 changed:\n got %s\nwant %s", got, goldenV1)
	}
	if got := hex.EncodeToString((&Segment{Generation: s.Generation, Entries: s.Entries}).Encode()); got != goldenSeg {
		t.Fatalf("segment version 1 changed:\n got %s\nwant %s", got, goldenSeg)
	}
	s.TakeRole("c", "http://c", time.UnixMilli(5000), time.Second)
	if got := hex.EncodeToString(s.Encode()); got != goldenV2 {
		t.Fatalf("version 2 changed:\n got %s\nwant %s", got, goldenV2)
	}
	s.Journal = &JournalPointer{ID: 7, From: 3}
	if v := s.Encode()[4]; v != FormatVersionJournal {
		t.Fatalf("manifest with a pointer written as version %d", v)
	}
	s.Journal = nil
	if got := hex.EncodeToString(s.Encode()); got != goldenV2 {
		t.Fatal("a cleared pointer does not encode as version 2 again")
	}
}

// randomJournalState builds a state with random batches, some entries ranged, maybe a
// pointer and maybe a role.
func randomJournalState(t *testing.T, r *mrand.Rand) *State {
	s := newState(t, DefaultConfig())
	for i := range r.IntN(6) {
		b := batch(fmt.Sprintf("p%d", r.IntN(3)), uint64(i+1), uint64(r.IntN(1000)), &batchfmt.AppendInput{Records: recs(1 + r.IntN(4))})
		b.ObjectBytes = 1 + uint64(r.IntN(1<<20))
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		if r.IntN(2) == 0 {
			e := &s.Entries[len(s.Entries)-1]
			e.Key = journal.Key(journal.ID(r.Uint64()), uint64(r.IntN(100)))
			e.Offset, e.Length = uint64(r.IntN(1<<30)), e.ObjectBytes
		}
	}
	if r.IntN(2) == 0 {
		s.Journal = &JournalPointer{ID: journal.ID(r.Uint64()), From: r.Uint64() >> r.IntN(64)}
	}
	if r.IntN(2) == 0 {
		s.TakeRole("c1", "http://c1", time.UnixMilli(int64(r.IntN(1e9))), time.Second)
	}
	s.RecentWrites = [][8]byte{{byte(r.IntN(256))}}
	return s
}

// TestJournalCodecRoundTrip: random manifests round-trip in the version their content
// calls for (3 with a pointer or a ranged entry), segments of their entries too (2 when
// ranged), and every truncation and sampled byte flip is corruption.
func TestJournalCodecRoundTrip(t *testing.T) {
	r := mrand.New(mrand.NewPCG(propertySeed(t), 3))
	for iter := range 300 {
		s := randomJournalState(t, r)
		data := s.Encode()
		want := byte(FormatVersion)
		switch {
		case s.Journal != nil || anyRanged(s.Entries):
			want = FormatVersionJournal
		case s.Committer.ID != "":
			want = FormatVersionCommitter
		}
		if data[4] != want {
			t.Fatalf("iter %d: version %d, want %d", iter, data[4], want)
		}
		got, err := Decode("m", data)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("iter %d: round trip:\n got %+v\nwant %+v", iter, got, s)
		}
		for n := range len(data) {
			if _, err := Decode("m", data[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("iter %d: truncated to %d: %v", iter, n, err)
			}
		}
		for range 8 {
			bad := append([]byte(nil), data...)
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			if _, err := Decode("m", bad); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("iter %d: flipped byte: %v", iter, err)
			}
		}
		if len(s.Entries) == 0 {
			continue
		}
		seg := &Segment{Generation: s.Generation, Entries: s.Entries}
		sdata := seg.Encode()
		if wantSeg := byte(map[bool]int{false: FormatVersion, true: SegmentVersionRanged}[anyRanged(s.Entries)]); sdata[4] != wantSeg {
			t.Fatalf("iter %d: segment version %d, want %d", iter, sdata[4], wantSeg)
		}
		gs, err := DecodeSegment("g", sdata)
		if err != nil || !reflect.DeepEqual(gs, seg) {
			t.Fatalf("iter %d: segment round trip: %v\n got %+v\nwant %+v", iter, err, gs, seg)
		}
		for n := range len(sdata) {
			if _, err := DecodeSegment("g", sdata[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("iter %d: segment truncated to %d: %v", iter, n, err)
			}
		}
	}
}

// TestJournalCodecRefusesInconsistentBodies: well-framed bodies that break the version 3
// rules are corruption: a version 3 with neither pointer nor ranged entry, a range whose
// length is not the object's size, an offset without a length, a range past 2^64, an
// empty role with a URL, a ranged segment without a ranged entry.
func TestJournalCodecRefusesInconsistentBodies(t *testing.T) {
	base := goldenState()
	v3 := func(s *State, ptr bool) []byte {
		return frame(manifestMagic, FormatVersionJournal, func(e *encoder) {
			full := s.Clone()
			full.Journal = &JournalPointer{ID: 1}
			b := full.Encode()
			// Re-frame the body of a real version 3 encoding, minus its pointer.
			body := b[headerLen : len(b)-trailerLen]
			body = body[:len(body)-3] // boolean, id 1, from 0
			e.raw(body)
			e.boolean(ptr)
			if ptr {
				e.uv(1)
				e.uv(0)
			}
		})
	}
	if _, err := Decode("m", v3(base, true)); err != nil {
		t.Fatalf("the well-formed control: %v", err)
	}
	cases := map[string][]byte{"version 3 without pointer or range": v3(base, false)}
	mutate := func(name string, f func(e *Entry)) {
		s := base.Clone()
		f(&s.Entries[0])
		cases[name] = v3(s, true)
	}
	mutate("length is not the object size", func(e *Entry) { e.Offset, e.Length = 5, e.ObjectBytes+1 })
	mutate("offset without length", func(e *Entry) { e.Offset = 5 })
	mutate("range overflows", func(e *Entry) { e.ObjectBytes, e.Length, e.Offset = 10, 10, math.MaxUint64-5 })
	role := base.Clone()
	role.Committer = CommitterRole{URL: "http://x"}
	cases["empty role with a url"] = v3(role, true)
	cases["ranged segment without a range"] = frame(segmentMagic, SegmentVersionRanged, func(e *encoder) {
		e.byte1(0)
		e.raw(base.Generation[:])
		encodeEntries(e, base.Entries, true)
	})
	for name, data := range cases {
		var ce *CorruptError
		_, err := Decode("m", data)
		if name == "ranged segment without a range" {
			_, err = DecodeSegment("g", data)
		}
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *CorruptError", name, err)
		}
	}
}

// TestApplyRefusesAnOpenJournal: a decoded state naming a journal refuses Apply with
// ErrJournalOpen and is unchanged; marked as that journal's writer (kept by Clone) it
// applies; marked as another journal's writer it still refuses.
func TestApplyRefusesAnOpenJournal(t *testing.T) {
	s := goldenState()
	s.Journal = &JournalPointer{ID: 42, From: 7}
	dec, err := Decode("m", s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	before := dec.Clone()
	if _, err := dec.Apply(batch("q", 1, 20, &batchfmt.AppendInput{Records: recs(1)})); !errors.Is(err, ErrJournalOpen) {
		t.Fatalf("Apply on a state with a journal: %v, want ErrJournalOpen", err)
	}
	if !reflect.DeepEqual(dec, before) {
		t.Fatal("a refused Apply changed the state")
	}
	other := dec.Clone()
	other.OwnJournal(41)
	if _, err := other.Apply(batch("q", 1, 20, &batchfmt.AppendInput{Records: recs(1)})); !errors.Is(err, ErrJournalOpen) {
		t.Fatalf("Apply as another journal's writer: %v, want ErrJournalOpen", err)
	}
	dec.OwnJournal(42)
	owned := dec.Clone()
	res, err := owned.Apply(batch("q", 1, 20, &batchfmt.AppendInput{Records: recs(2)}))
	if err != nil || res.Appends[0].Start.SeqNum != before.Tail.SeqNum || owned.Tail.SeqNum != before.Tail.SeqNum+2 {
		t.Fatalf("Apply as the journal's writer: %v %+v", err, res)
	}
	if again, _ := Decode("m", owned.Encode()); again.journalOpen() == nil {
		t.Fatal("the writer mark survived encoding")
	}
}

// TestSealKeepsRangedEntries: Write seals ranged entries into version 2 segments, and the
// index finds them there with their ranges intact.
func TestSealKeepsRangedEntries(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := Open(store, "s/manifest")
	snap, err := m.Create(ctx, DefaultConfig(), time.UnixMilli(1000))
	if err != nil {
		t.Fatal(err)
	}
	st := snap.State.Clone()
	for i := range MaxRecentEntries + 1 {
		if _, err := st.Apply(batch("p", uint64(i+1), 10, &batchfmt.AppendInput{Records: recs(1)})); err != nil {
			t.Fatal(err)
		}
		e := &st.Entries[len(st.Entries)-1]
		e.Key, e.Offset, e.Length = journal.Key(5, uint64(i)), uint64(64+i), e.ObjectBytes
	}
	if _, err := m.Write(ctx, st, snap.Version); err != nil {
		t.Fatal(err)
	}
	got, err := m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.State.Segments) != 1 {
		t.Fatalf("%d segments, want 1", len(got.State.Segments))
	}
	raw, _, err := objectstore.ReadAll(ctx, store, got.State.Segments[0].Key)
	if err != nil || raw[4] != SegmentVersionRanged {
		t.Fatalf("segment: %v, version %d", err, raw[4])
	}
	x := NewIndex(store, got.State)
	for _, seq := range []uint64{0, 100, SealEntries - 1, SealEntries, MaxRecentEntries} {
		e, ok, err := x.FindSeq(ctx, seq)
		if err != nil || !ok || e.Key != journal.Key(5, seq) || e.Offset != 64+seq || e.Length != e.ObjectBytes {
			t.Fatalf("seq %d: %v %v %+v", seq, err, ok, e)
		}
	}
}
