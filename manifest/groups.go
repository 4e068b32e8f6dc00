package manifest

import (
	"fmt"
	"math"
)

// OpenGroup creates the consumer group name if needed and bumps its epoch, returning the new
// epoch: the caller becomes the group's one active member, and members with older epochs are
// stale from the write on. A group it creates starts above every epoch the stream ever gave
// (each epoch bump is a write, so none exceeds the write counter): a member of a deleted
// group of the same name can never pass for a member of the new one.
func (s *State) OpenGroup(name string) uint64 {
	if s.Groups == nil {
		s.Groups = map[string]Group{}
	}
	g, ok := s.Groups[name]
	if !ok {
		g.Epoch = s.WriteCounter
	}
	g.Epoch++
	s.Groups[name] = g
	return g.Epoch
}

// ResetGroup creates the consumer group name if needed, bumps its epoch as OpenGroup does
// (fencing its active member) and sets its checkpoint to seq, backwards or forwards, kept
// between the first readable record and the tail. It returns the new epoch and checkpoint.
func (s *State) ResetGroup(name string, seq uint64) (epoch, checkpoint uint64) {
	epoch = s.OpenGroup(name)
	g := s.Groups[name]
	g.Checkpoint = min(max(seq, s.ReadableStart()), s.Tail.SeqNum)
	s.Groups[name] = g
	return epoch, g.Checkpoint
}

// CheckEpoch returns a StaleEpochError unless epoch is the group's current epoch.
func (s *State) CheckEpoch(name string, epoch uint64) error {
	g, ok := s.Groups[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoGroup, name)
	}
	if g.Epoch != epoch {
		return &StaleEpochError{Group: name, Epoch: epoch, Current: g.Epoch}
	}
	return nil
}

// SetCheckpoint moves the group's checkpoint forward to seq (every record below seq is
// acknowledged) if epoch is current. A checkpoint never moves backwards (an older seq is a
// no-op, reported by changed=false), and never past the tail, unless the manifest names a
// journal: the records a member read and acknowledged may then be in the journal's windows,
// past the tail the manifest shows.
func (s *State) SetCheckpoint(name string, epoch, seq uint64) (changed bool, err error) {
	if err := s.CheckEpoch(name, epoch); err != nil {
		return false, err
	}
	if seq > s.Tail.SeqNum && s.Journal == nil {
		return false, fmt.Errorf("manifest: checkpoint %d of group %q is past the tail %d", seq, name, s.Tail.SeqNum)
	}
	g := s.Groups[name]
	if seq <= g.Checkpoint {
		return false, nil
	}
	g.Checkpoint = seq
	s.Groups[name] = g
	return true, nil
}

// expiredBy returns whether an arrival time is past the retention age at nowMs (an age of
// more than 584 million years never expires). Retention must not be infinite.
func (s *State) expiredBy(nowMs uint64) func(arrival uint64) bool {
	ageMs := uint64(math.MaxUint64)
	if a := s.Config.Retention.AgeSecs; a <= math.MaxUint64/1000 {
		ageMs = a * 1000
	}
	return func(arrival uint64) bool { return nowMs > arrival && nowMs-arrival > ageMs }
}

// DeleteGroup removes a consumer group.
func (s *State) DeleteGroup(name string) { delete(s.Groups, name) }

// DropPoint is the seq_num below which entries may leave the manifest now: the trim point,
// raised by the retention age (entries whose arrival is older than the age) and, in queue
// mode with at least one group, by the lowest group checkpoint.
func (s *State) DropPoint(nowMs uint64) uint64 {
	p := s.TrimPoint
	if s.Config.QueueMode && len(s.Groups) > 0 {
		low := s.Tail.SeqNum
		for _, g := range s.Groups {
			low = min(low, g.Checkpoint)
		}
		p = max(p, low)
	}
	if !s.Config.Retention.Infinite {
		// Arrivals are the producers' clocks when they sealed their batches, not monotonic
		// in seq_num order: the first young segment or entry protects everything after it,
		// entries included (they follow the segments).
		expired := s.expiredBy(nowMs)
		young := false
		for i := range s.Segments {
			r := &s.Segments[i]
			if !expired(r.MaxArrival) {
				young = true
				break
			}
			p = max(p, r.EndSeq)
		}
		for i := 0; !young && i < len(s.Entries); i++ {
			e := &s.Entries[i]
			if !expired(e.Arrival) {
				break
			}
			p = max(p, e.EndSeq())
		}
	}
	return min(p, s.Tail.SeqNum)
}

// DropBefore removes the segment references and entries that lie wholly below seq (their
// objects become unreferenced, for the collector). An entry or segment straddling seq stays;
// readers skip its records below the trim point. It returns the number of entries removed.
// The tail, and so seq_num assignment, is not affected.
func (s *State) DropBefore(seq uint64) int {
	n := 0
	i := 0
	for i < len(s.Segments) && s.Segments[i].EndSeq <= seq {
		n += int(s.Segments[i].Entries)
		i++
	}
	s.Segments = append([]SegmentRef(nil), s.Segments[i:]...)
	j := 0
	if len(s.Segments) == 0 {
		for j < len(s.Entries) && s.Entries[j].EndSeq() <= seq && s.Entries[j].EndSeq() < s.Tail.SeqNum {
			j++
		}
	}
	n += j
	s.Entries = append([]Entry(nil), s.Entries[j:]...)
	return n
}

// Prune drops what DropPoint allows and returns the number of entries removed.
func (s *State) Prune(nowMs uint64) int { return s.DropBefore(s.DropPoint(nowMs)) }
