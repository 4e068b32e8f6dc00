package manifest

import (
	"bytes"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"reflect"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
)

const testWindow = "journals/00000000000000aa/00000000000000000007"

// randomDelta returns a delta of random entries from tail (some carried in testWindow,
// with offsets relative to the carried records, which it returns too).
func randomDelta(t *testing.T, r *mrand.Rand, tail Position) (*Delta, []byte) {
	s := newState(t, DefaultConfig())
	s.Tail = tail
	var records []byte
	for i := range r.IntN(5) {
		b := batch(fmt.Sprintf("p%d", r.IntN(3)), uint64(i+1), tail.Timestamp+uint64(r.IntN(100)), &batchfmt.AppendInput{Records: recs(1 + r.IntN(3))})
		if r.IntN(3) == 0 {
			b.Appends[0].MatchSeqNum = u64(1 << 40) // rejected: an entry with no records
		}
		b.ObjectBytes = 1 + uint64(r.IntN(64))
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		if r.IntN(2) == 0 {
			e := &s.Entries[len(s.Entries)-1]
			e.Key, e.Offset, e.Length = testWindow, uint64(len(records)), e.ObjectBytes
			for range e.Length {
				records = append(records, byte(r.IntN(256)))
			}
		}
	}
	d := &Delta{Entries: s.Entries, Tail: s.Tail, FencingToken: fmt.Sprint("tok", r.IntN(3)), TrimPoint: uint64(r.IntN(10))}
	if len(s.Producers) > 0 {
		d.Producers = s.Producers
	}
	return d, records
}

// TestDeltaCodecRoundTrip: a delta followed by its records decodes to itself, with the
// carried entries' offsets made absolute (and their bytes the records they were given); the
// length returned is the encoding's; every truncation of the encoding is corruption.
func TestDeltaCodecRoundTrip(t *testing.T) {
	r := mrand.New(mrand.NewPCG(propertySeed(t), 5))
	for iter := range 300 {
		d, records := randomDelta(t, r, Position{SeqNum: uint64(r.IntN(1000)), Timestamp: uint64(r.IntN(1000))})
		enc := EncodeDelta(d, testWindow)
		section := append(append([]byte(nil), enc...), records...)
		sectionOff := uint64(64 + r.IntN(1000))
		window := append(make([]byte, sectionOff), section...)
		got, n, err := DecodeDelta(testWindow, section, sectionOff)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if n != len(enc) {
			t.Fatalf("iter %d: length %d, encoded %d", iter, n, len(enc))
		}
		want := *d
		want.Entries = append([]Entry(nil), d.Entries...)
		off := 0
		for i := range want.Entries {
			if e := &want.Entries[i]; e.Key == testWindow {
				e.Offset += sectionOff + uint64(n)
				if !bytes.Equal(window[e.Offset:e.Offset+e.Length], records[off:off+int(e.Length)]) {
					t.Fatalf("iter %d: entry %d's range does not hold its records", iter, i)
				}
				off += int(e.Length)
			}
		}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("iter %d:\n got %+v\nwant %+v", iter, got, &want)
		}
		for k := range len(enc) {
			var ce *CorruptError
			if _, _, err := DecodeDelta(testWindow, enc[:k], sectionOff); !errors.As(err, &ce) {
				t.Fatalf("iter %d: truncated to %d: %v", iter, k, err)
			}
		}
	}
}

// TestDeltaCodecRefuses: a carried entry past the section's records, a carried entry
// without a range, an entry naming its own window by key, and a newer delta version are
// corruption.
func TestDeltaCodecRefuses(t *testing.T) {
	e := Entry{Key: testWindow, FirstSeq: 4, Records: 1, ObjectBytes: 3, Length: 3, Appends: 1}
	d := &Delta{Entries: []Entry{e}, Tail: Position{SeqNum: 5}}
	ok := append(EncodeDelta(d, testWindow), 1, 2, 3)
	if _, _, err := DecodeDelta(testWindow, ok, 0); err != nil {
		t.Fatalf("control: %v", err)
	}
	unranged := *d
	unranged.Entries = []Entry{{Key: testWindow, FirstSeq: 4, Records: 1, ObjectBytes: 3, Appends: 1}}
	cases := map[string][]byte{
		"past the records":  ok[:len(ok)-1],
		"carried, unranged": EncodeDelta(&unranged, testWindow),
		"version 2":         append([]byte{2}, ok[1:]...),
		"own window by key": append(EncodeDelta(d, "another"), 1, 2, 3),
	}
	for name, b := range cases {
		var ce *CorruptError
		if _, _, err := DecodeDelta(testWindow, b, 0); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *CorruptError", name, err)
		}
	}
}

// FuzzDecodeDelta: DecodeDelta never panics, fails only with a *CorruptError, and what it
// accepts re-encodes (offsets made relative again) to a delta that decodes the same.
func FuzzDecodeDelta(f *testing.F) {
	e := Entry{Key: testWindow, FirstSeq: 4, Records: 1, ObjectBytes: 3, Length: 3, Appends: 1, ProducerID: "p", BatchNum: 2}
	other := Entry{Key: "ingest/x", FirstSeq: 5, Records: 2, ObjectBytes: 9, Appends: 2, Rejected: []Rejection{{Append: 1, Reason: RejectSeqNumMismatch, Expected: 3}}}
	f.Add(append(EncodeDelta(&Delta{Entries: []Entry{e, other}, Tail: Position{SeqNum: 7, Timestamp: 9}, FencingToken: "t", TrimPoint: 2,
		Producers: map[string]ProducerState{"p": {LastBatch: 2, LastSeenMs: 5}}}, testWindow), 1, 2, 3), uint64(100))
	f.Add(EncodeDelta(&Delta{}, testWindow), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, sectionOff uint64) {
		d, n, err := DecodeDelta(testWindow, b, sectionOff)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("error of the wrong type: %v", err)
			}
			return
		}
		relative := func(d *Delta, n int) {
			for i := range d.Entries {
				if en := &d.Entries[i]; en.Key == testWindow {
					en.Offset -= sectionOff + uint64(n)
				}
			}
		}
		relative(d, n)
		enc := EncodeDelta(d, testWindow)
		again, m, err := DecodeDelta(testWindow, append(enc, b[n:]...), sectionOff)
		if err != nil || m != len(enc) {
			t.Fatalf("re-encoding: %v (length %d of %d)", err, m, len(enc))
		}
		relative(again, m)
		if !reflect.DeepEqual(again, d) {
			t.Fatalf("re-encoding decodes to\n%+v, not\n%+v", again, d)
		}
	})
}

// TestApplyDeltaContiguity: a delta that does not start at the tail (a gap or an overlap),
// or whose entries do not end at its own tail, is corruption and changes nothing; a delta
// of record-less entries at the tail applies.
func TestApplyDeltaContiguity(t *testing.T) {
	s := goldenState() // tail 3
	before := s.Clone()
	at := func(first, records, tail uint64) *Delta {
		return &Delta{Entries: []Entry{{Key: "ingest/b", FirstSeq: first, Records: records, Appends: 1}}, Tail: Position{SeqNum: tail, Timestamp: s.Tail.Timestamp}}
	}
	for name, d := range map[string]*Delta{
		"gap":               at(4, 1, 5),
		"overlap":           at(2, 2, 4),
		"tail past entries": at(3, 1, 5),
		"no entries, moved": {Tail: Position{SeqNum: 4, Timestamp: s.Tail.Timestamp}},
		"timestamp back":    {Tail: Position{SeqNum: 3}},
	} {
		var ce *CorruptError
		if err := s.ApplyDelta(d); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *CorruptError", name, err)
		}
		if !reflect.DeepEqual(s, before) {
			t.Fatalf("%s: a refused delta changed the state", name)
		}
	}
	if err := s.ApplyDelta(at(3, 0, 3)); err != nil {
		t.Fatalf("record-less entry at the tail: %v", err)
	}
	if err := s.ApplyDelta(at(3, 2, 5)); err != nil || s.Tail.SeqNum != 5 || len(s.Entries) != len(before.Entries)+2 {
		t.Fatalf("contiguous delta: %v, tail %d", err, s.Tail.SeqNum)
	}
}

// TestApplyDeltaOnlyRaises: the trim point and producer rows only rise (a direct write may
// have raised them since the window); a new row is added; token and tail are the delta's.
func TestApplyDeltaOnlyRaises(t *testing.T) {
	s := goldenState()
	s.TrimPoint = 3
	s.Producers = map[string]ProducerState{"a": {LastBatch: 5, LastSeenMs: 50}, "b": {LastBatch: 1, LastSeenMs: 10}}
	d := &Delta{Tail: s.Tail, FencingToken: "new", TrimPoint: 1, Producers: map[string]ProducerState{
		"a": {LastBatch: 4, LastSeenMs: 60}, "b": {LastBatch: 2, LastSeenMs: 5}, "c": {LastBatch: 7, LastSeenMs: 70}}}
	if err := s.ApplyDelta(d); err != nil {
		t.Fatal(err)
	}
	want := map[string]ProducerState{"a": {LastBatch: 5, LastSeenMs: 60}, "b": {LastBatch: 2, LastSeenMs: 10}, "c": {LastBatch: 7, LastSeenMs: 70}}
	if !reflect.DeepEqual(s.Producers, want) || s.TrimPoint != 3 || s.FencingToken != "new" {
		t.Fatalf("producers %v trim %d token %q", s.Producers, s.TrimPoint, s.FencingToken)
	}
	d.TrimPoint = 9
	if err := s.ApplyDelta(d); err != nil || s.TrimPoint != 9 {
		t.Fatalf("raised trim: %v %d", err, s.TrimPoint)
	}
}
