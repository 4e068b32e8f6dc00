package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// Config configures a Reader: the stream and how it is read. Start from DefaultConfig, set
// ObjectStore, and pass it to NewReader, which validates it and reports every problem at
// once. A group member (Open) reads through a Reader and takes a GroupConfig, which holds a
// Config and the group's own settings.
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
	// commit (see Notifier). Optional; not used with Watch.
	Notifier *Notifier
	// Watch, if set, is the process's watch hub: the followers of a stream that share it
	// share one manifest watcher (package watch), which polls on the hub's intervals
	// instead of every PollInterval, and which a committer in the process can publish to.
	// A read at the tail that does not wait (Session.Read without wait, a member's Poll)
	// takes the watcher's latest manifest instead of reading one. Optional; nil: each
	// follower polls on its own.
	Watch *watch.Hub
	// MaxBatchRecords and MaxBatchBytes bound one batch returned by Session.Next and
	// Consumer.Next. Defaults 1000 records and 1 MiB metered, S2's read limits.
	MaxBatchRecords int
	MaxBatchBytes   int
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

// DefaultConfig returns the defaults; ObjectStore is nil and must be set.
func DefaultConfig() Config {
	return Config{
		Stream:          stream.Default(),
		ReadAheadDepth:  4,
		ReadAheadBytes:  64 << 20,
		PollInterval:    100 * time.Millisecond,
		MaxBatchRecords: 1000,
		MaxBatchBytes:   1 << 20,
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
	if c.Stream.IsZero() {
		bad("stream is required (stream.Default(), stream.New or stream.Locate)")
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
	if err := c.Backoff.Validate(); err != nil {
		bad("%v", err)
	}
	if c.FetchAttempts < 1 {
		bad("fetch attempts %d must be >= 1", c.FetchAttempts)
	}
	return errors.Join(errs...)
}
