package manifest

import (
	"maps"
	"math"
	"slices"
)

// deltaVersion is the first byte of an encoded Delta.
const deltaVersion = 1

// Delta is one stream's journal fields changed by one commit window: what a fold applies
// (ApplyDelta). Consumer groups, checkpoints, config and retention never travel in a delta;
// their writers change the manifest directly.
type Delta struct {
	Entries      []Entry                  // appended in the window, contiguous from the tail before it
	Tail         Position                 // after the window
	FencingToken string                   // after the window
	TrimPoint    uint64                   // after the window
	Producers    map[string]ProducerState // rows the window set
}

// EncodeDelta encodes d for a section of window windowKey. The encoding is self-delimiting:
// the section goes on with the records the window carries. An entry whose Key is windowKey
// must be ranged, and its Offset is relative to the end of the encoded delta (the start of
// the carried records), so the encoding does not depend on where the section lands in the
// window; it is written without its key. Other entries are written as they are.
//
//	delta: version(1)=1
//	       n_entries { in_window(1) [key, unless in_window] entry fields offset length }*
//	       tail_seq tail_ts fencing_token trim_point
//	       n_producers { id last_batch last_seen_ms }*
func EncodeDelta(d *Delta, windowKey string) []byte {
	e := &encoder{b: make([]byte, 0, 64+64*len(d.Entries))}
	e.byte1(deltaVersion)
	e.uv(uint64(len(d.Entries)))
	for i := range d.Entries {
		en := &d.Entries[i]
		in := en.Key == windowKey
		e.boolean(in)
		if !in {
			e.str(en.Key)
		}
		encodeEntryBody(e, en, true)
	}
	e.position(d.Tail)
	e.str(d.FencingToken)
	e.uv(d.TrimPoint)
	e.uv(uint64(len(d.Producers)))
	for _, id := range slices.Sorted(maps.Keys(d.Producers)) {
		p := d.Producers[id]
		e.str(id)
		e.uv(p.LastBatch)
		e.uv(p.LastSeenMs)
	}
	return e.b
}

// DecodeDelta decodes the delta at the start of b, the bytes of a section of window
// windowKey that starts at byte sectionOffset of the window. Entries in the window get
// Key = windowKey and absolute offsets (sectionOffset + the encoded delta's length + the
// relative offset), and must lie inside b. It returns the delta and the encoded delta's
// length (where the carried records start in b). Bad bytes: a *CorruptError.
func DecodeDelta(windowKey string, b []byte, sectionOffset uint64) (*Delta, int, error) {
	dec := &decoder{key: windowKey, b: b}
	if v := dec.byte1("delta version"); dec.err == nil && v != deltaVersion {
		dec.fail("delta version %d, this build reads %d", v, deltaVersion)
	}
	d := &Delta{}
	var inWindow []int
	if n := dec.count("delta entries", 17); n > 0 {
		d.Entries = make([]Entry, n)
		for i := range d.Entries {
			en := &d.Entries[i]
			if dec.boolean("entry in window") {
				en.Key = windowKey
				inWindow = append(inWindow, i)
			} else {
				en.Key = dec.str("entry key")
				if dec.err == nil && en.Key == windowKey {
					dec.fail("delta entry %d names its window by key", i)
				}
			}
			decodeEntryBody(dec, en, true)
			if dec.err == nil && en.Key == windowKey && !en.Ranged() {
				dec.fail("delta entry %d is in its window without a byte range", i)
			}
		}
	}
	d.Tail.SeqNum = dec.uv("delta tail seq_num")
	d.Tail.Timestamp = dec.uv("delta tail timestamp")
	d.FencingToken = dec.str("delta fencing token")
	d.TrimPoint = dec.uv("delta trim point")
	if n := dec.count("delta producers", 3); n > 0 {
		d.Producers = make(map[string]ProducerState, n)
		for range n {
			id := dec.str("producer id")
			p := ProducerState{LastBatch: dec.uv("producer batch"), LastSeenMs: dec.uv("producer seen")}
			if _, dup := d.Producers[id]; dup && dec.err == nil {
				dec.fail("duplicate producer %q", id)
			}
			d.Producers[id] = p
		}
	}
	if dec.err != nil {
		return nil, 0, dec.err
	}
	n := len(b) - len(dec.b)
	records := uint64(len(dec.b))
	for _, i := range inWindow {
		en := &d.Entries[i]
		if en.Offset > records || en.Length > records-en.Offset {
			return nil, 0, corrupt(windowKey, "delta entry %d: bytes [%d, +%d) past the section's %d bytes of records", i, en.Offset, en.Length, records)
		}
		if sectionOffset > math.MaxUint64-uint64(n)-en.Offset-en.Length {
			return nil, 0, corrupt(windowKey, "delta entry %d: offset overflows", i)
		}
		en.Offset += sectionOffset + uint64(n)
	}
	if err := checkChain(windowKey, nil, d.Entries, -1); err != nil {
		return nil, 0, err
	}
	return d, n, nil
}

// ApplyDelta folds d into s: d's entries must start at s.Tail.SeqNum, be contiguous, and
// end at d.Tail.SeqNum (a window with no records for the stream starts and ends at the
// tail), else it returns a *CorruptError naming the gap: a fold never skips. It appends the
// entries and sets Tail and FencingToken; the trim point and each producer row's batch
// number and last-seen time only rise (they may have been raised by a direct write since).
// On error s is unchanged.
func (s *State) ApplyDelta(d *Delta) error {
	next := s.Tail.SeqNum
	for i := range d.Entries {
		if en := &d.Entries[i]; en.FirstSeq != next {
			return corrupt(deltaKey(d), "journal delta entry %d starts at seq_num %d, the stream is at %d", i, en.FirstSeq, next)
		}
		next = d.Entries[i].EndSeq()
	}
	if next != d.Tail.SeqNum {
		return corrupt(deltaKey(d), "journal delta ends at seq_num %d, its tail says %d", next, d.Tail.SeqNum)
	}
	if d.Tail.Timestamp < s.Tail.Timestamp {
		return corrupt(deltaKey(d), "journal delta moves the tail timestamp back from %d to %d", s.Tail.Timestamp, d.Tail.Timestamp)
	}
	if err := checkChain(deltaKey(d), nil, d.Entries, -1); err != nil {
		return err
	}
	for i := range d.Entries {
		en := d.Entries[i]
		en.Rejected = slices.Clone(en.Rejected)
		s.Entries = append(s.Entries, en)
	}
	s.Tail = d.Tail
	s.FencingToken = d.FencingToken
	s.TrimPoint = max(s.TrimPoint, d.TrimPoint)
	if s.Producers == nil && len(d.Producers) > 0 {
		s.Producers = make(map[string]ProducerState, len(d.Producers))
	}
	for id, p := range d.Producers {
		if cur, ok := s.Producers[id]; ok {
			p = ProducerState{LastBatch: max(cur.LastBatch, p.LastBatch), LastSeenMs: max(cur.LastSeenMs, p.LastSeenMs)}
		}
		s.Producers[id] = p
	}
	return nil
}

// deltaKey names a delta in errors: the object its first entry names, if any.
func deltaKey(d *Delta) string {
	if len(d.Entries) > 0 {
		return d.Entries[0].Key
	}
	return ""
}
