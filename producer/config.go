package producer

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
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

// Config configures a Producer. Start from DefaultConfig, set ObjectStore and what else you
// need, and pass it to New, which validates it and reports every problem at once. A field
// whose zero is not a legal value is refused at zero, never taken for its default: a
// Config{ObjectStore: s} is refused, with a hint to start from DefaultConfig. A nil Logger,
// Registerer or Now, and a zero Committer, are legal and documented below.
//
// The first six fields are opendata's Buffer's ProducerConfig with its defaults.
type Config struct {
	// ObjectStore is where batch objects and the manifest live. Required.
	ObjectStore objectstore.Store
	// Stream is the stream appended to: its manifest and the prefix of its batch objects
	// (opendata's Buffer's manifest_path and data_path_prefix in one value). Default
	// stream.Default(), "ingest/manifest" and "ingest"; stream.New and stream.Locate make
	// others, and refuse a data prefix that would share another stream's. The zero Stream is
	// refused.
	Stream stream.Stream
	// FlushInterval: the open batch is flushed this long after its first append. Default
	// 100 ms. FlushEveryAppend flushes every append at once (no batching across appends).
	// Must be > 0 or FlushEveryAppend: zero is refused, so that a forgotten field does not
	// silently turn batching off.
	FlushInterval time.Duration
	// FlushSizeBytes: the open batch is flushed when its encoded size reaches this. Default
	// 64 MiB. Must be > 0.
	FlushSizeBytes int
	// MaxBufferedInputs bounds the appends accepted but not yet acknowledged; Append blocks
	// beyond it. Default 1000. Must be > 0.
	MaxBufferedInputs int
	// BatchCompression of batch objects. Default none.
	BatchCompression batchfmt.Compression

	// MaxInFlightBytes bounds the metered bytes accepted but not yet acknowledged; Append
	// blocks beyond it. It also bounds the buffers of committed batches the producer keeps
	// to encode new ones into. Default 256 MiB; at least batchfmt.MaxAppendBytes.
	MaxInFlightBytes int64
	// UploadConcurrency is the number of batch uploads that may run at once. Default 4.
	UploadConcurrency int
	// MaxGroupBatches is the most batches one manifest write commits (group commit).
	// Default 256; 1 disables group commit.
	MaxGroupBatches int
	// CommitDeadline: a batch object older than this (since its upload began) is not
	// committed; it is uploaded again under a new key first. It must be at most half the
	// collector's grace period: package gc checks that against its Config.CommitDeadline,
	// which must be at least this (manifest.CheckCommitDeadline). Default 5 minutes (half of
	// the default 10-minute grace).
	CommitDeadline time.Duration
	// Backoff between retries of uploads, manifest reads and manifest writes.
	Backoff manifest.Backoff
	// DeliveryTimeout: an append fails with ErrDeliveryTimeout unless it is committed
	// within DeliveryTimeout of its arrival (the Append call, or ReceivedAt), not counting its
	// time in the open batch (at most FlushInterval); one not accepted within half of it is
	// refused at once. Appends accepted after a failed one fail with it, so none commits out
	// of order; a batch a manifest write may have committed is never failed so. It also
	// bounds New's opening of the stream. Zero, the default, means no bound: the producer
	// retries until it succeeds or Close gives up. Must not be negative.
	DeliveryTimeout time.Duration
	// ProducerID names this producer in the manifest's deduplication table. Default: random.
	// Two live producers must never share an id. A fixed id may be reused by a restarted
	// process only once the previous process is gone for good: wait CommitDeadline after it
	// died before reusing its id, so that no manifest write of the old process can still land.
	ProducerID string
	// Committer says how to reach the stream's committer (a sluice serve daemon): its URL
	// while the manifest names none live (a live one it names is asked first), its token,
	// an in-process one. Batches are still uploaded by the producer; with no committer
	// answering it commits directly. Default zero: commit directly unless the manifest
	// names a committer. Its clock defaults to Now.
	Committer commitclient.Config
	// Batching is the client-side batching Submit uses. Default S2's SDKs' (5 ms, 1000
	// records, 1 MiB).
	Batching batchfmt.BatchingConfig
	// CreateStream creates the manifest (with StreamConfig) when it does not exist. Default
	// true; when false, New fails with manifest.ErrNotExist.
	CreateStream bool
	// StreamConfig is used only when the producer creates the stream.
	StreamConfig manifest.Config
	// Logger receives operational logs. Default: discard (nil discards too).
	Logger *slog.Logger
	// Registerer receives the producer's metrics. Default nil: metrics are kept but not
	// registered.
	Registerer prometheus.Registerer
	// Now is the producer's clock (arrival times). Default time.Now (nil is time.Now too).
	Now func() time.Time
}

// DefaultConfig returns the defaults; ObjectStore is left nil and must be set.
func DefaultConfig() Config {
	return Config{
		Stream:            stream.Default(),
		FlushInterval:     100 * time.Millisecond,
		FlushSizeBytes:    64 << 20,
		MaxBufferedInputs: 1000,
		BatchCompression:  batchfmt.CompressionNone,
		MaxInFlightBytes:  256 << 20,
		UploadConcurrency: 4,
		MaxGroupBatches:   256,
		CommitDeadline:    5 * time.Minute,
		Backoff:           manifest.DefaultBackoff(),
		DeliveryTimeout:   0,
		ProducerID:        "",
		Batching:          batchfmt.DefaultBatchingConfig(),
		CreateStream:      true,
		StreamConfig:      manifest.DefaultConfig(),
		Logger:            slog.New(slog.DiscardHandler),
		Now:               time.Now,
	}
}

// FlushEveryAppend is the Config.FlushInterval that flushes every append at once, in a batch
// object of its own (the lowest latency, one object and one commit per append).
const FlushEveryAppend time.Duration = -1

// ErrInvalidConfig is matched by every configuration problem New reports.
var ErrInvalidConfig = errors.New("producer: invalid config")

// Validate reports every problem of c at once (errors.Join), each matching ErrInvalidConfig.
// An empty ProducerID is valid (New picks a random one).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.ObjectStore == nil {
		bad("object store is required")
	}
	if c.FlushSizeBytes == 0 && c.MaxBufferedInputs == 0 && c.MaxInFlightBytes == 0 && c.UploadConcurrency == 0 {
		bad("limits are all zero: start from DefaultConfig() and change what you need")
	}
	if c.Stream.IsZero() {
		bad("stream is required (stream.Default(), stream.New or stream.Locate)")
	}
	if c.FlushInterval <= 0 && c.FlushInterval != FlushEveryAppend {
		bad("flush interval %v must be > 0, or FlushEveryAppend to flush every append at once", c.FlushInterval)
	}
	if maxFlush := batchfmt.MaxObjectBytes - 2*batchfmt.MaxAppendBytes; c.FlushSizeBytes <= 0 || c.FlushSizeBytes > maxFlush {
		bad("flush size %d must be > 0 and at most %d (batch objects stay under %d bytes)", c.FlushSizeBytes, maxFlush, batchfmt.MaxObjectBytes)
	}
	if c.MaxBufferedInputs <= 0 {
		bad("max buffered inputs %d must be > 0", c.MaxBufferedInputs)
	}
	if !c.BatchCompression.Valid() {
		bad("unknown batch compression %d", c.BatchCompression)
	}
	if c.MaxInFlightBytes < batchfmt.MaxAppendBytes {
		bad("max in-flight bytes %d must be at least %d (one append)", c.MaxInFlightBytes, batchfmt.MaxAppendBytes)
	}
	if c.UploadConcurrency <= 0 {
		bad("upload concurrency %d must be > 0", c.UploadConcurrency)
	}
	if c.MaxGroupBatches <= 0 {
		bad("max group batches %d must be > 0", c.MaxGroupBatches)
	}
	if c.CommitDeadline <= 0 || c.CommitDeadline >= manifest.ProducerExpiry {
		bad("commit deadline %v must be > 0 and shorter than the producer table expiry %v", c.CommitDeadline, manifest.ProducerExpiry)
	}
	if c.DeliveryTimeout < 0 {
		bad("delivery timeout %v must not be negative (0 means no bound)", c.DeliveryTimeout)
	}
	if err := c.Backoff.Validate(); err != nil {
		bad("%v", err)
	}
	if err := c.Committer.Validate(); err != nil {
		bad("%v", err)
	}
	if len(c.ProducerID) > 128 {
		bad("producer id is %d bytes, more than 128", len(c.ProducerID))
	}
	if err := c.Batching.Validate(); err != nil {
		bad("batching: %v", err)
	}
	if err := c.StreamConfig.Validate(); err != nil {
		bad("stream config: %v", err)
	}
	return errors.Join(errs...)
}

func randomUint64() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("producer: crypto/rand failed: %v", err)) // never happens on supported platforms
	}
	return binary.BigEndian.Uint64(b[:])
}

func randomID(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("producer: crypto/rand failed: %v", err)) // never happens on supported platforms
	}
	return hex.EncodeToString(b)
}
