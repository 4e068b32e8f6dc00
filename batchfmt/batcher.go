package batchfmt

import (
	"errors"
	"fmt"
	"time"
)

// BatchingConfig is the client-side batching of S2's SDKs (S2's documentation, "Batching").
type BatchingConfig struct {
	// Linger is how long a batch waits for more records, measured from its first record.
	// Zero is legal: a batch is due as soon as it has a record (no waiting).
	Linger time.Duration
	// MaxBatchRecords is the most records per batch, 1 to 1000.
	MaxBatchRecords int
	// MaxBatchBytes is the most metered bytes per batch, 8 bytes to 1 MiB.
	MaxBatchBytes int
}

// Defaults from S2's documentation.
const (
	DefaultLinger          = 5 * time.Millisecond
	DefaultMaxBatchRecords = MaxAppendRecords
	DefaultMaxBatchBytes   = MaxAppendBytes
)

// DefaultBatchingConfig returns S2's defaults: 5 ms linger, 1000 records, 1 MiB.
func DefaultBatchingConfig() BatchingConfig {
	return BatchingConfig{Linger: DefaultLinger, MaxBatchRecords: DefaultMaxBatchRecords, MaxBatchBytes: DefaultMaxBatchBytes}
}

// ErrInvalidConfig is matched (errors.Is) by every configuration error of this package.
var ErrInvalidConfig = errors.New("batchfmt: invalid batching config")

// ConfigError is one out-of-range configuration value; Min and Max are the inclusive bounds
// (Max is 0 when there is no upper bound).
type ConfigError struct {
	Field string // S2's name: "linger", "max_batch_records", "max_batch_bytes"
	Value int64
	Min   int64
	Max   int64
	Unit  string // "" for counts, "bytes", or "ns" for durations
}

func (e *ConfigError) Error() string {
	switch {
	case e.Field == "linger":
		return fmt.Sprintf("linger must not be negative, got %v", time.Duration(e.Value))
	case e.Unit == "bytes":
		return fmt.Sprintf("%s must be between %d and %d bytes, got %d", e.Field, e.Min, e.Max, e.Value)
	case e.Max == 0:
		return fmt.Sprintf("%s must be at least %d, got %d", e.Field, e.Min, e.Value)
	}
	return fmt.Sprintf("%s must be between %d and %d, got %d", e.Field, e.Min, e.Max, e.Value)
}
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Validate reports every out-of-range value at once (errors.Join of *ConfigError).
func (c BatchingConfig) Validate() error {
	var errs []error
	if c.Linger < 0 {
		errs = append(errs, &ConfigError{Field: "linger", Value: int64(c.Linger), Unit: "ns"})
	}
	if c.MaxBatchRecords < 1 || c.MaxBatchRecords > MaxAppendRecords {
		errs = append(errs, &ConfigError{Field: "max_batch_records", Value: int64(c.MaxBatchRecords), Min: 1, Max: MaxAppendRecords})
	}
	if c.MaxBatchBytes < MinBatchBytes || c.MaxBatchBytes > MaxAppendBytes {
		errs = append(errs, &ConfigError{Field: "max_batch_bytes", Value: int64(c.MaxBatchBytes), Min: MinBatchBytes, Max: MaxAppendBytes, Unit: "bytes"})
	}
	return errors.Join(errs...)
}

// RecordTooLargeError is a record whose metered size alone exceeds max_batch_bytes, so no
// batch can hold it. Its text is S2's.
type RecordTooLargeError struct {
	Size int // the record's metered size
	Max  int // max_batch_bytes
}

func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("record size in metered bytes (%d) exceeds max_batch_bytes (%d)", e.Size, e.Max)
}
func (e *RecordTooLargeError) Is(target error) bool { return target == ErrInvalid }

// BatcherOption configures a Batcher.
type BatcherOption func(*Batcher)

// WithFencingToken sets the fencing token carried on every batch.
func WithFencingToken(token string) BatcherOption {
	return func(b *Batcher) { b.token = &token }
}

// WithMatchSeqNum sets match_seq_num of the first batch; each later batch's is the previous
// one's plus the previous batch's length.
func WithMatchSeqNum(seqNum uint64) BatcherOption {
	return func(b *Batcher) { s := seqNum; b.nextSeq = &s }
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) BatcherOption {
	return func(b *Batcher) { b.now = now }
}

// Batcher turns a sequence of records into appends, as S2's SDKs batch:
//
//   - a batch is complete when it holds MaxBatchRecords records or MaxBatchBytes metered
//     bytes, when Linger has passed since its first record (see Deadline and Poll), or at
//     the end of input (Flush);
//   - a record that would overflow the current batch completes it and becomes the first
//     record of the next, so records are never split;
//   - a record larger than MaxBatchBytes on its own is rejected (*RecordTooLargeError);
//   - every batch carries the fencing token, if set, and match_seq_num, if set, advances by
//     each batch's length.
//
// It has no goroutine: the owner calls Add for each record, waits until Deadline (or for the
// next record, whichever comes first), calls Poll, and calls Flush at the end of input. It is
// not safe for concurrent use. It keeps the records given to Add (not copies): their byte
// slices must not change until the batch holding them is returned.
type Batcher struct {
	cfg     BatchingConfig
	now     func() time.Time
	token   *string
	nextSeq *uint64

	cur   []Record
	last  int // the length of the last batch taken: what the next is sized for
	bytes int
	first time.Time
}

// NewBatcher returns a batcher for cfg; it reports every invalid setting at once.
func NewBatcher(cfg BatchingConfig, opts ...BatcherOption) (*Batcher, error) {
	b := &Batcher{cfg: cfg, now: time.Now}
	for _, o := range opts {
		o(b)
	}
	errs := []error{cfg.Validate()}
	if b.token != nil && len(*b.token) > MaxFencingTokenLen {
		errs = append(errs, &AppendError{Reason: ReasonFencingTokenTooLong, Detail: fmt.Sprintf("fencing token length (%d) exceeds %d bytes", len(*b.token), MaxFencingTokenLen)})
	}
	if b.now == nil {
		errs = append(errs, fmt.Errorf("%w: nil clock", ErrInvalidConfig))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b, nil
}

// Config returns the batcher's configuration.
func (b *Batcher) Config() BatchingConfig { return b.cfg }

// Len returns the number of records in the open batch.
func (b *Batcher) Len() int { return len(b.cur) }

// MeteredBytes returns the metered size of the open batch.
func (b *Batcher) MeteredBytes() int { return b.bytes }

// NextMatchSeqNum returns the match_seq_num the next batch will carry, if one was set.
func (b *Batcher) NextMatchSeqNum() (uint64, bool) {
	if b.nextSeq == nil {
		return 0, false
	}
	return *b.nextSeq, true
}

// Deadline returns when the open batch's linger ends, or false when there is no open batch.
func (b *Batcher) Deadline() (time.Time, bool) {
	if len(b.cur) == 0 {
		return time.Time{}, false
	}
	return b.first.Add(b.cfg.Linger), true
}

// Add adds one record and returns the batches it completed, in order (zero, one or two: the
// open batch, if its linger had passed or rec overflows it, then the batch rec filled). A
// record that breaks the record rules or exceeds MaxBatchBytes is rejected with its error
// and changes nothing.
func (b *Batcher) Add(rec Record) ([]AppendInput, error) {
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	size := rec.MeteredSize()
	if size > b.cfg.MaxBatchBytes {
		return nil, &RecordTooLargeError{Size: size, Max: b.cfg.MaxBatchBytes}
	}
	now := b.now()
	var out []AppendInput
	if len(b.cur) > 0 && (!now.Before(b.first.Add(b.cfg.Linger)) || b.bytes+size > b.cfg.MaxBatchBytes) {
		out = append(out, b.take())
	}
	if len(b.cur) == 0 {
		b.first = now
		if b.cur == nil {
			// As long as the last batch: a full one at full speed, so that the slice does
			// not grow (and copy) its way there.
			b.cur = make([]Record, 0, min(b.cfg.MaxBatchRecords, max(b.last, 64)))
		}
	}
	b.cur = append(b.cur, rec)
	b.bytes += size
	if len(b.cur) >= b.cfg.MaxBatchRecords || b.bytes >= b.cfg.MaxBatchBytes {
		out = append(out, b.take())
	}
	return out, nil
}

// Poll returns the open batch if its linger has passed by the batcher's clock.
func (b *Batcher) Poll() (AppendInput, bool) {
	d, ok := b.Deadline()
	if !ok || b.now().Before(d) {
		return AppendInput{}, false
	}
	return b.take(), true
}

// Flush returns the open batch regardless of linger (end of input), or false if it is empty.
func (b *Batcher) Flush() (AppendInput, bool) {
	if len(b.cur) == 0 {
		return AppendInput{}, false
	}
	return b.take(), true
}

func (b *Batcher) take() AppendInput {
	in := AppendInput{Records: b.cur}
	if b.token != nil {
		t := *b.token
		in.FencingToken = &t
	}
	if b.nextSeq != nil {
		s := *b.nextSeq
		in.MatchSeqNum = &s
		*b.nextSeq += uint64(len(b.cur))
	}
	b.last = len(b.cur)
	b.cur = nil
	b.bytes = 0
	b.first = time.Time{}
	return in
}
