package bench

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
)

// SentHeader is the name of the header that carries a record's send time: decimal
// nanoseconds since the run began.
const SentHeader = "t"

// ErrNoSentHeader is returned for a delivered record that carries no valid SentHeader (a
// record the bench did not write).
var ErrNoSentHeader = errors.New("bench: a delivered record has no send time header")

// Target is what a run writes to and reads from: one stream of a store or of a daemon.
type Target interface {
	// Create creates the stream (and whatever else the target needs to hold it).
	Create(ctx context.Context) error
	// Delete deletes what Create made. It is safe to call when Create failed or was not
	// called.
	Delete(ctx context.Context) error
	// NewWriter opens the i-th producer (from 0).
	NewWriter(ctx context.Context, i int) (Writer, error)
	// Follow opens a reader of the stream from its first record, following its tail.
	Follow(ctx context.Context) (Follower, error)
	// Requests returns the object-store requests made so far, by operation and purpose
	// (keys made by RequestKey: "put/commit", "get/poll", ...), and false when the target
	// cannot tell.
	Requests(ctx context.Context) (map[string]int64, bool)
}

// Writer is one producer.
type Writer interface {
	// Send appends recs as one append, or, with a single record when BatchesRecords, as one
	// record of a batch the writer builds. It may return before the ack: Pending waits for it.
	Send(ctx context.Context, recs []batchfmt.Record) (Pending, error)
	// BatchesRecords reports whether the writer batches records sent one at a time itself
	// (the producer's Submit). If not, the runner sends what has queued up as one append.
	BatchesRecords() bool
	// Close flushes what is buffered and waits for it, giving up when ctx ends.
	Close(ctx context.Context) error
}

// Pending is an append in flight.
type Pending interface {
	// Wait returns when the append is acknowledged (with the time of the ack) or failed.
	Wait(ctx context.Context) (time.Time, error)
}

// Follower reads a stream in order, following its tail.
type Follower interface {
	// Next returns the headers of the next records, blocking until there are some.
	Next(ctx context.Context) ([][]batchfmt.Header, error)
	Close()
}

// sentValue encodes a send time for SentHeader.
func sentValue(d time.Duration) []byte { return strconv.AppendInt(nil, int64(d), 10) }

// sentOf finds the send time in a record's headers.
func sentOf(hs []batchfmt.Header) (time.Duration, error) {
	for _, h := range hs {
		if string(h.Name) == SentHeader {
			n, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return 0, ErrNoSentHeader
			}
			return time.Duration(n), nil
		}
	}
	return 0, ErrNoSentHeader
}

// done is a Pending already resolved.
type done struct {
	at  time.Time
	err error
}

func (d done) Wait(context.Context) (time.Time, error) { return d.at, d.err }
