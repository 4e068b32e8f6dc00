package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// Config configures a Reader or a group Consumer. Start from DefaultConfig, set ObjectStore
// (and Group for a Consumer), and pass it to NewReader or Open, which validate it and report
// every problem at once.
//
// The first two fields are opendata's Buffer's ConsumerConfig (its manifest_path and
// data_path_prefix are the Stream); its gc_interval and gc_grace_period configure the
// collector, gc.Config's Interval and GracePeriod. A field whose zero is not a legal value is
// refused at zero, never taken for its default; a nil Logger, Registerer or Notifier is legal
// and documented below.
type Config struct {
	// ObjectStore is where the manifest and the batch objects live. Required.
	ObjectStore objectstore.Store
	// Stream is the stream read: its manifest (the manifest stores the batch objects' full
	// keys). Default stream.Default(); stream.New and stream.Locate make others. The zero
	// Stream is refused.
	Stream stream.Stream

	// Group names the consumer group a Consumer joins. Required by Open, ignored by Reader.
	Group string
	// NewGroupStart is where a group that Open creates starts: StartAtHead (the zero value,
	// the stream's first readable record) or StartAtTail (only records appended after the
	// join). A group that exists resumes from its checkpoint either way.
	NewGroupStart GroupStart
	// StreamName names the stream in the stream label of a member's lag metrics. Default
	// "": the stream's manifest key.
	StreamName string
	// ReadAheadDepth is the most batch objects fetched ahead of delivery, in parallel.
	// Default 4; at least 1 (1 = no parallelism, one object fetched at a time).
	ReadAheadDepth int
	// ReadAheadBytes bounds the bytes of objects fetched but not yet delivered, counted as
	// stored (a zstd object takes its decompressed size in memory once decoded). Default 64
	// MiB. One object is always fetched even if it alone is larger.
	ReadAheadBytes int64
	// PollInterval is how often a follower at the tail re-reads the manifest (with a
	// conditional GET, so an unchanged manifest costs no body transfer). Default 100 ms; must
	// be > 0. A Notifier wakes followers at once, between polls.
	PollInterval time.Duration
	// Notifier, if set, wakes followers as soon as a producer in the same process signals a
	// commit (see Notifier). Optional.
	Notifier *Notifier
	// MaxBatchRecords and MaxBatchBytes bound one batch returned by Session.Next and
	// Consumer.Next. Defaults 1000 records and 1 MiB metered, the seeds' read limits.
	MaxBatchRecords int
	MaxBatchBytes   int
	// AckInterval: a group's pending acknowledgements are written at most this long after
	// the first of them. Default 1 s; must be > 0.
	AckInterval time.Duration
	// AckRecords: pending acknowledgements covering this many records are written at once,
	// without waiting for AckInterval. Default 10000; must be > 0.
	AckRecords int
	// Committer says how a group member reaches the stream's committer (a sluice serve
	// daemon), which writes its checkpoints with its commits: its URL while the manifest
	// names none live (a live one it names is asked first), its token, an in-process one.
	// With none answering the member writes them itself. Default zero: write them directly
	// unless the manifest names a committer.
	Committer commitclient.Config
	// Backoff between retries of failed object and manifest reads.
	Backoff manifest.Backoff
	// FetchAttempts is how many times a failed object read (other than a missing or corrupt
	// object) is tried before the session fails. Default 5; at least 1.
	FetchAttempts int
	// Logger receives operational logs. Default: discard (nil discards too).
	Logger *slog.Logger
	// Registerer receives the consumer's metrics (sluice_consumer_*). Default nil: metrics are
	// kept but not registered. Several readers may share one registerer: they share the
	// collectors.
	Registerer prometheus.Registerer
}

// GroupStart is where a new consumer group starts reading (Config.NewGroupStart).
type GroupStart uint8

const (
	// StartAtHead starts a new group at the stream's first readable record.
	StartAtHead GroupStart = iota
	// StartAtTail starts a new group at the tail: its checkpoint is the tail's seq_num
	// when Open creates it.
	StartAtTail
)

func (s GroupStart) String() string {
	switch s {
	case StartAtHead:
		return "head"
	case StartAtTail:
		return "tail"
	}
	return fmt.Sprintf("GroupStart(%d)", uint8(s))
}

// DefaultConfig returns the defaults; ObjectStore is nil and must be set.
func DefaultConfig() Config {
	return Config{
		Stream:          stream.Default(),
		ReadAheadDepth:  4,
		ReadAheadBytes:  64 << 20,
		PollInterval:    100 * time.Millisecond,
		MaxBatchRecords: 1000,
		MaxBatchBytes:   1 << 20,
		AckInterval:     time.Second,
		AckRecords:      10000,
		Backoff:         manifest.DefaultBackoff(),
		FetchAttempts:   5,
		Logger:          slog.New(slog.DiscardHandler),
	}
}

// withNilDefaults is c with its nil Logger, documented as discarding, made one that does.
func (c Config) withNilDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// MaxGroupNameLen bounds consumer group names.
const MaxGroupNameLen = 128

// Validate reports every problem of c at once (errors.Join), each matching ErrInvalidConfig.
// Group is not checked here (a Reader does not need one); Open checks it.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.ObjectStore == nil {
		bad("object store is required")
	}
	if c.ReadAheadDepth == 0 && c.ReadAheadBytes == 0 && c.PollInterval == 0 && c.MaxBatchRecords == 0 {
		bad("limits are all zero: start from DefaultConfig() and change what you need")
	}
	if err := c.Committer.Validate(); err != nil {
		bad("%v", err)
	}
	if c.Stream.IsZero() {
		bad("stream is required (stream.Default(), stream.New or stream.Locate)")
	}
	if len(c.Group) > MaxGroupNameLen {
		bad("group name is %d bytes, more than %d", len(c.Group), MaxGroupNameLen)
	}
	if c.NewGroupStart > StartAtTail {
		bad("unknown new group start %v", c.NewGroupStart)
	}
	if c.ReadAheadDepth < 1 {
		bad("read-ahead depth %d must be >= 1", c.ReadAheadDepth)
	}
	if c.ReadAheadBytes < 1 {
		bad("read-ahead bytes %d must be >= 1", c.ReadAheadBytes)
	}
	if c.PollInterval <= 0 {
		bad("poll interval %v must be > 0", c.PollInterval)
	}
	if c.MaxBatchRecords < 1 {
		bad("max batch records %d must be >= 1", c.MaxBatchRecords)
	}
	if c.MaxBatchBytes < batchfmt.MinBatchBytes {
		bad("max batch bytes %d must be >= %d (one empty record)", c.MaxBatchBytes, batchfmt.MinBatchBytes)
	}
	if c.AckInterval <= 0 {
		bad("ack interval %v must be > 0", c.AckInterval)
	}
	if c.AckRecords < 1 {
		bad("ack records %d must be >= 1", c.AckRecords)
	}
	if err := c.Backoff.Validate(); err != nil {
		bad("%v", err)
	}
	if c.FetchAttempts < 1 {
		bad("fetch attempts %d must be >= 1", c.FetchAttempts)
	}
	return errors.Join(errs...)
}
