package consumer

import (
	"context"
	"time"

	"github.com/sluice-dev/sluice/manifest"
)

// Lag is how far a consumer group is behind its stream.
type Lag struct {
	// Records counts the readable records at or after the group's checkpoint: the tail's
	// seq_num minus the later of the checkpoint and the first readable seq_num (records
	// below the trim point or dropped by retention will never be delivered). 0 when caught
	// up.
	Records uint64
	// Seconds is the age of the oldest record not yet acknowledged: the one at the
	// checkpoint, or the first readable one when the checkpoint is below it. 0 when caught
	// up, and when that record's timestamp is in the future.
	Seconds float64
}

// TimestampFunc returns the timestamp (ms) of the record at seq, which the entry e holds.
type TimestampFunc func(ctx context.Context, e *manifest.Entry, seq uint64) (uint64, error)

// GroupLag returns, at now, the lag of a group whose checkpoint is checkpoint, on the stream
// state that idx indexes. The oldest unacknowledged record's timestamp comes from the
// manifest when it tells it exactly (the record opens its batch, is the stream's last, or
// its batch holds one timestamp only); otherwise from ts, or with ts nil from its batch's
// first record, so that Seconds may be too high by up to the batch's time span. It reads
// the store only to load sealed segments that idx does not hold (and through ts).
func GroupLag(ctx context.Context, idx *manifest.Index, checkpoint uint64, now time.Time, ts TimestampFunc) (Lag, error) {
	records, at, err := oldestUnacked(ctx, idx, checkpoint, ts)
	lag := Lag{Records: records}
	if records > 0 {
		lag.Seconds = age(at, now)
	}
	return lag, err
}

// oldestUnacked returns GroupLag's records and the timestamp (ms) of the oldest
// unacknowledged record, when records > 0 (0 if no entry holds it).
func oldestUnacked(ctx context.Context, idx *manifest.Index, checkpoint uint64, ts TimestampFunc) (records, at uint64, err error) {
	st := idx.State()
	tail := st.Tail.SeqNum
	start := max(checkpoint, st.ReadableStart())
	if start >= tail {
		return 0, 0, nil
	}
	records = tail - start
	if start == tail-1 {
		return records, st.Tail.Timestamp, nil
	}
	e, ok, err := idx.FindSeq(ctx, start)
	if err != nil || !ok {
		return records, uint64(time.Now().UnixMilli()), err // no readable record holds a timestamp
	}
	at = e.MinTS
	if start > e.FirstSeq && e.MinTS != e.MaxTS && ts != nil {
		if at, err = ts(ctx, &e, start); err != nil {
			return records, 0, err
		}
	}
	return records, at, nil
}

// age is the seconds from a timestamp (ms) to now, 0 for a timestamp not in the past.
func age(tsMs uint64, now time.Time) float64 {
	n := now.UnixMilli()
	if n <= 0 || uint64(n) <= tsMs {
		return 0
	}
	return float64(uint64(n)-tsMs) / 1000
}

// RecordTimestamp is a TimestampFunc that reads the record's batch object (one store
// request).
func (r *Reader) RecordTimestamp(ctx context.Context, e *manifest.Entry, seq uint64) (uint64, error) {
	b, err := r.fetchObject(ctx, e)
	if err != nil {
		return 0, err
	}
	it, clock := b.Iter(e.IsRejected), e.Clock()
	for s := e.FirstSeq; it.Next(); s++ {
		rec := it.Record()
		ts := clock.Next(rec.HasTimestamp, rec.Timestamp)
		if s >= seq {
			return ts, nil
		}
	}
	if err := it.Err(); err != nil {
		return 0, objectErr(e, ErrCorrupt, err)
	}
	return e.MaxTS, nil
}
