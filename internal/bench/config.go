package bench

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
)

// MaxRecordSize is the largest record body a run writes: an append's metered limit (1 MiB)
// less the record's other metered bytes (8, and SentHeader with its value).
var MaxRecordSize = batchfmt.MaxAppendBytes - recordMetered(0)

// ErrInvalidConfig is matched by every problem Config.Validate reports.
var ErrInvalidConfig = errors.New("bench: invalid config")

// Config is what a run does.
type Config struct {
	// Producers is the number of concurrent producers (Target.NewWriter). At least 1.
	Producers int
	// Rate is the records per second of all producers together, shared evenly; 0 writes
	// as fast as the target takes them.
	Rate float64
	// RecordSize is each record's body in bytes, 1 to MaxRecordSize. Each record also
	// carries SentHeader.
	RecordSize int
	// Duration is how long the producers send. The run then waits for the last acks and for
	// the reader to catch up (at most DrainTimeout).
	Duration time.Duration
	// AppendSize, when > 0, sends that many records per append; 0 sends records one at a
	// time (Writer.BatchesRecords) or what has queued up (up to 1000 records, 1 MiB).
	AppendSize int
	// DrainTimeout bounds the wait for the reader once the producers are done. Default 30s.
	DrainTimeout time.Duration
	// Progress, if set, receives a line per second while the run goes; with
	// ProgressOverwrite (a terminal) each line overwrites the last with '\r'.
	Progress          io.Writer
	ProgressOverwrite bool
}

// Validate reports every problem of c at once, each matching ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Producers < 1 {
		bad("producers %d: must be at least 1", c.Producers)
	}
	if c.Rate < 0 {
		bad("rate %v: must not be negative", c.Rate)
	}
	if c.RecordSize < 1 || c.RecordSize > MaxRecordSize {
		bad("record size %d: must be 1 to %d bytes", c.RecordSize, MaxRecordSize)
	}
	if c.Duration <= 0 {
		bad("duration %v: must be positive", c.Duration)
	}
	if c.AppendSize < 0 || c.AppendSize > batchfmt.MaxAppendRecords {
		bad("append size %d: must be 0 to %d records", c.AppendSize, batchfmt.MaxAppendRecords)
	} else if c.AppendSize > 0 && c.RecordSize >= 1 && c.AppendSize*recordMetered(c.RecordSize) > batchfmt.MaxAppendBytes {
		bad("append size %d: %d records of %d bytes exceed an append's %d metered bytes", c.AppendSize, c.AppendSize, c.RecordSize, batchfmt.MaxAppendBytes)
	}
	if c.DrainTimeout < 0 {
		bad("drain timeout %v: must not be negative", c.DrainTimeout)
	}
	return errors.Join(errs...)
}

// recordMetered is the largest metered size of a record the run writes with a body of
// size bytes (its send time takes up to 19 digits).
func recordMetered(size int) int {
	r := batchfmt.Record{Headers: []batchfmt.Header{{Name: []byte(SentHeader), Value: make([]byte, 19)}}}
	return r.MeteredSize() + size
}
