package manifest

import (
	"fmt"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// Batch is one uploaded batch object to commit: its key, size, the producer that wrote it and
// that producer's batch number, the arrival time the timestamping rules use, and its appends
// in object order.
type Batch struct {
	Key         string
	ObjectBytes uint64
	ProducerID  string
	// BatchNum is > 0 and increases with every batch a producer commits, in commit order.
	BatchNum  uint64
	ArrivalMs uint64
	Appends   []*batchfmt.AppendInput
	// Metered, if set, is each append's metered size, for appends whose records are given
	// without their headers and bodies (a committer applies another process's batch: the
	// bytes stay in the batch object). Nil: computed from the records.
	Metered []uint64
	// Skip, if set, is asked before append i's conditions: true rejects it as
	// RejectPreceding. Rejected, if set, is told of every append Apply rejects, in order.
	// Together they let a producer chain an append session's appends, each applied only if
	// none before it failed (neither is stored).
	Skip     func(i int) bool
	Rejected func(i int)
}

// AppendResult is the outcome of one append: its positions, or the condition that rejected it.
// End is exclusive: End.SeqNum = Start.SeqNum + records, End.Timestamp is the timestamp of the
// append's last record.
type AppendResult struct {
	Start, End Position
	Err        error // nil, *SeqNumMismatchError, *FencingTokenMismatchError or ErrTimestampRequired
}

// BatchResult is the outcome of Apply for one batch.
type BatchResult struct {
	// Duplicate: the producer table shows this batch (or a later one of the same producer) as
	// committed already; the state was not changed and Entry/Appends are empty. Find the
	// entry with Index.FindBatch and rebuild the results with Results.
	Duplicate bool
	Entry     Entry
	Appends   []AppendResult
}

// Validate reports what makes b unfit for Apply (which checks it first, and changes nothing
// then), so that a caller applying several batches can refuse them all before any.
func (b *Batch) Validate() error {
	switch {
	case objectstore.ValidateKey(b.Key) != nil:
		return fmt.Errorf("%w: bad key %q", ErrInvalidBatch, b.Key)
	case b.ProducerID == "":
		return fmt.Errorf("%w: empty producer id", ErrInvalidBatch)
	case b.BatchNum == 0:
		return fmt.Errorf("%w: batch number 0", ErrInvalidBatch)
	case len(b.Appends) == 0:
		return fmt.Errorf("%w: no appends", ErrInvalidBatch)
	case uint64(len(b.Appends)) > 1<<32-1:
		return fmt.Errorf("%w: too many appends", ErrInvalidBatch)
	case b.Metered != nil && len(b.Metered) != len(b.Appends):
		return fmt.Errorf("%w: %d metered sizes for %d appends", ErrInvalidBatch, len(b.Metered), len(b.Appends))
	}
	for i, in := range b.Appends {
		if in == nil || len(in.Records) == 0 {
			return fmt.Errorf("%w: append %d is empty", ErrInvalidBatch, i)
		}
	}
	return nil
}

// Apply is the commit step: it applies one batch to s, append by append, in object order.
//
// For each append, against the state as it stands at that point: the fencing token is checked
// first (FencingTokenMismatchError{Actual}), then match_seq_num against the tail seq_num
// (SeqNumMismatchError{Expected}), then, under client-require, that every record has a
// timestamp (ErrTimestampRequired). A rejected append takes no seq_nums and changes nothing;
// the other appends still commit. An accepted append's records get the next seq_nums and
// their timestamps (see Clock); a fence record then sets the token (after the append's own
// check, so later appends see it); a trim record moves the trim point to min(its argument,
// its own seq_num + 1), never backwards (as S2 does: a trim past the tail leaves the trim
// record itself unreadable too, and nothing after it). The tail advances.
//
// The batch is recorded as an entry (even when every append was rejected, so its results can
// be rebuilt) and in the producer table. A batch the table shows as committed already is a
// duplicate and leaves s unchanged. Apply also prunes the producer table (PruneProducers) at
// the batch's arrival time.
//
// While s names a journal (s.Journal) that s is not marked as the writer of (OwnJournal),
// Apply changes nothing and returns an error matching ErrJournalOpen: the journal may hold
// commits past s.Tail.
func (s *State) Apply(b *Batch) (*BatchResult, error) {
	if err := s.journalOpen(); err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if p, ok := s.Producers[b.ProducerID]; ok && b.BatchNum <= p.LastBatch {
		return &BatchResult{Duplicate: true}, nil
	}
	e := Entry{
		Key:         b.Key,
		FirstSeq:    s.Tail.SeqNum,
		ObjectBytes: b.ObjectBytes,
		Floor:       s.Tail.Timestamp,
		Arrival:     b.ArrivalMs,
		TSMode:      s.Config.Timestamping.Mode,
		Uncapped:    s.Config.Timestamping.Uncapped,
		ProducerID:  b.ProducerID,
		BatchNum:    b.BatchNum,
		Appends:     uint32(len(b.Appends)),
	}
	clock := e.Clock()
	res := &BatchResult{Appends: make([]AppendResult, len(b.Appends))}
	seq := s.Tail.SeqNum
	ts := s.Tail.Timestamp
	for i, in := range b.Appends {
		rej, bad := s.checkAppend(in, seq)
		if b.Skip != nil && b.Skip(i) {
			rej, bad = Rejection{Reason: RejectPreceding}, true
		}
		if bad {
			rej.Append = uint32(i)
			e.Rejected = append(e.Rejected, rej)
			res.Appends[i].Err = rej.Err()
			if b.Rejected != nil {
				b.Rejected(i)
			}
			continue
		}
		r := &res.Appends[i]
		r.Start.SeqNum = seq
		for j := range in.Records {
			rec := &in.Records[j]
			ts = clock.Next(rec.HasTimestamp, rec.Timestamp)
			if j == 0 {
				r.Start.Timestamp = ts
			}
			switch rec.Command() {
			case batchfmt.CommandFence:
				s.FencingToken = string(rec.Body)
			case batchfmt.CommandTrim:
				if t, ok := rec.TrimSeqNum(); ok {
					t = min(t, seq+1) // as S2: at most past the trim record itself
					if t > s.TrimPoint {
						s.TrimPoint = t
					}
				}
			}
			if b.Metered == nil {
				e.MeteredBytes += uint64(rec.MeteredSize())
			}
			seq++
		}
		if b.Metered != nil {
			e.MeteredBytes += b.Metered[i]
		}
		r.End = Position{SeqNum: seq, Timestamp: ts}
		if e.Records == 0 {
			e.MinTS = r.Start.Timestamp
		}
		e.Records += uint64(len(in.Records))
	}
	if e.Records == 0 {
		e.MinTS = e.Floor
	}
	e.MaxTS = ts
	s.Tail = Position{SeqNum: seq, Timestamp: ts}
	s.Entries = append(s.Entries, e)
	s.Producers[b.ProducerID] = ProducerState{LastBatch: b.BatchNum, LastSeenMs: b.ArrivalMs}
	s.PruneProducers(b.ArrivalMs)
	res.Entry = e
	return res, nil
}

func (s *State) checkAppend(in *batchfmt.AppendInput, tail uint64) (Rejection, bool) {
	if in.FencingToken != nil && *in.FencingToken != s.FencingToken {
		return Rejection{Reason: RejectFencingToken, Actual: s.FencingToken}, true
	}
	if in.MatchSeqNum != nil && *in.MatchSeqNum != tail {
		return Rejection{Reason: RejectSeqNumMismatch, Expected: tail}, true
	}
	if s.Config.Timestamping.Mode == ClientRequire {
		for j := range in.Records {
			if !in.Records[j].HasTimestamp {
				return Rejection{Reason: RejectTimestampRequired}, true
			}
		}
	}
	return Rejection{}, false
}

// Results rebuilds the per-append results of a committed entry from the appends of its
// object (in object order), exactly as Apply computed them. A producer uses it after a write
// whose outcome was unknown turned out to have taken effect. It fails with ErrInvalidBatch
// when the appends do not fit the entry.
func Results(e *Entry, appends []*batchfmt.AppendInput) ([]AppendResult, error) {
	if uint64(len(appends)) != uint64(e.Appends) {
		return nil, fmt.Errorf("%w: entry %q has %d appends, given %d", ErrInvalidBatch, e.Key, e.Appends, len(appends))
	}
	out := make([]AppendResult, len(appends))
	clock := e.Clock()
	seq := e.FirstSeq
	for i, in := range appends {
		if rej, bad := e.Rejection(i); bad {
			out[i].Err = rej.Err()
			continue
		}
		var ts uint64
		out[i].Start.SeqNum = seq
		for j := range in.Records {
			rec := &in.Records[j]
			ts = clock.Next(rec.HasTimestamp, rec.Timestamp)
			if j == 0 {
				out[i].Start.Timestamp = ts
			}
			seq++
		}
		out[i].End = Position{SeqNum: seq, Timestamp: ts}
	}
	if seq != e.EndSeq() {
		return nil, fmt.Errorf("%w: entry %q holds %d records, the appends %d", ErrInvalidBatch, e.Key, e.Records, seq-e.FirstSeq)
	}
	return out, nil
}
