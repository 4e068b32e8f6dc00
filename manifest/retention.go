package manifest

import (
	"context"
	"errors"
)

// Retention primitives used by package gc and package consumer. They add to DropPoint and
// DropBefore (groups.go) without changing them.

// ReadableStart is the first seq_num a reader may see: the later of the trim point and the
// first seq_num still referenced, never past the tail. A read that asks for an earlier
// position starts here (S2 clamps such reads to the trim point).
func (s *State) ReadableStart() uint64 {
	return min(max(s.TrimPoint, s.FirstSeq()), s.Tail.SeqNum)
}

// IsEmpty reports whether the stream holds no readable record (everything was trimmed,
// expired or acknowledged in queue mode, or nothing was ever appended).
func (s *State) IsEmpty() bool { return s.ReadableStart() >= s.Tail.SeqNum }

// ApplyRetention drops, oldest first, the segment references and entries that lie wholly
// below DropPoint(nowMs) and whose latest arrival is at least minAgeMs before nowMs. Unlike
// DropBefore it also drops the last entry of the stream when retention covers it, so that a
// fully trimmed, expired or acknowledged stream references no object at all (queue mode
// leaves nothing behind).
//
// minAgeMs keeps the newest entries in the manifest for a while even when they are already
// below the drop point: a producer whose manifest write had an unknown outcome rebuilds its
// acknowledgements from its entry (Index.FindBatch), and should find it there. Readers never
// see records below the trim point whatever the entries say.
//
// It returns the number of entries removed (counting those under dropped segments). The tail
// is not affected.
func (s *State) ApplyRetention(nowMs, minAgeMs uint64) int {
	point := s.DropPoint(nowMs)
	old := func(arrival uint64) bool { return arrival+minAgeMs <= nowMs }
	n := 0
	i := 0
	for i < len(s.Segments) && s.Segments[i].EndSeq <= point && old(s.Segments[i].MaxArrival) {
		n += int(s.Segments[i].Entries)
		i++
	}
	if i > 0 {
		s.Segments = append([]SegmentRef(nil), s.Segments[i:]...)
	}
	if len(s.Segments) > 0 {
		return n
	}
	j := 0
	for j < len(s.Entries) && s.Entries[j].EndSeq() <= point && old(s.Entries[j].Arrival) {
		j++
	}
	if j > 0 {
		s.Entries = append([]Entry(nil), s.Entries[j:]...)
	}
	return n + j
}

// ExpiredPrefix looks inside the sealed segments that DropPoint keeps for the retention age
// (it keeps a segment whole while any entry under it is young, and every segment after it)
// and returns the end of the run of entries, from the trim point on, that arrived longer than
// the age before nowMs: every record below the returned seq_num is past the age. It returns
// 0 when retention is infinite, when no segment is kept for its age, or when the first entry
// of that run is young. It reads the segments it walks (and the segments above them) through
// the index's cache, and stops at the first young entry or at the end of the segments.
//
// Package gc raises the trim point to it, so that those records stop being readable; their
// entries stay in the segment until it expires whole, but their objects, below the readable
// start, are no longer referenced and the collector deletes them once old.
func (x *Index) ExpiredPrefix(ctx context.Context, nowMs uint64) (uint64, error) {
	s := x.st
	if s.Config.Retention.Infinite || len(s.Segments) == 0 {
		return 0, nil
	}
	expired := s.expiredBy(nowMs)
	var first *SegmentRef // the first segment DropPoint keeps for its age
	for i := range s.Segments {
		if !expired(s.Segments[i].MaxArrival) {
			first = &s.Segments[i]
			break
		}
	}
	if first == nil {
		return 0, nil
	}
	segEnd := s.Segments[len(s.Segments)-1].EndSeq
	from := max(s.TrimPoint, first.FirstSeq)
	if from >= segEnd {
		return 0, nil
	}
	var end uint64
	err := x.Walk(ctx, from, func(e *Entry) error {
		if e.FirstSeq >= segEnd || !expired(e.Arrival) {
			return errStop
		}
		end = e.EndSeq()
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	return end, nil
}
