package gc

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/stream"
)

// Config configures a Collector. Start from DefaultConfig. A field whose zero is not a legal
// value is refused at zero, never taken for its default; a nil Logger, Now, Registerer or
// OnPass is legal and documented below.
type Config struct {
	// Interval between the rounds of Run. Default 5 minutes (opendata's Buffer's gc_interval).
	Interval time.Duration
	// GracePeriod is the minimum age, by the store's clock, of an unreferenced object before
	// it is deleted. Default 10 minutes (opendata's Buffer's gc_grace_period). Producers must
	// give up on uploads older than half of it: see CommitDeadline.
	GracePeriod time.Duration
	// CommitDeadline is the longest producer.Config.CommitDeadline of the producers that
	// write the streams collected. Default 5 minutes, the producers' default. It must be at
	// most half GracePeriod (manifest.CheckCommitDeadline), so that no upload is committed
	// after the collector could have deleted it: a shorter GracePeriod needs producers, and
	// this field, with a shorter deadline.
	CommitDeadline time.Duration
	// MaxListPerPass bounds the objects one pass lists per stream (both prefixes together).
	// Default 10000. The next pass continues where this one stopped. FullPass lists in
	// rounds of this many until it reaches the end.
	MaxListPerPass int
	// MaxDeletesPerPass bounds the objects one pass deletes per stream. Default 1000.
	MaxDeletesPerPass int
	// KeepRecent keeps entries in the manifest for this long after their arrival even when
	// retention already covers them, so that a producer that must rebuild its
	// acknowledgements after a write with an unknown outcome still finds its entry. Records
	// below the trim point are unreadable regardless. Default 1 minute; 0 is legal.
	KeepRecent time.Duration
	// ProbeReuse: a probe of the store's clock is reused by the passes over other streams for
	// this long (by the local monotonic clock) instead of writing a probe per stream and pass.
	// An older probe only makes objects look younger than they are, so reuse is never unsafe;
	// it delays deletions by at most this long. Default 1 minute; 0 probes on every pass.
	ProbeReuse time.Duration
	// Now is the clock of retention (age, delete_on_empty). Default time.Now (nil is time.Now
	// too). Object ages never use it: they use the store's clock.
	Now func() time.Time
	// Backoff between retries of manifest writes (retention).
	Backoff manifest.Backoff
	// OnPass, if set, is called after every pass of Run, with its report and error.
	OnPass func(Report, error)
	// Logger receives operational logs. Default: discard (nil discards too).
	Logger *slog.Logger
	// Registerer receives the collector's metrics (sluice_gc_*). Default nil: not registered.
	Registerer prometheus.Registerer
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Interval:          5 * time.Minute,
		GracePeriod:       10 * time.Minute,
		CommitDeadline:    5 * time.Minute,
		MaxListPerPass:    10000,
		MaxDeletesPerPass: 1000,
		KeepRecent:        time.Minute,
		ProbeReuse:        time.Minute,
		Now:               time.Now,
		Backoff:           manifest.DefaultBackoff(),
		Logger:            slog.New(slog.DiscardHandler),
	}
}

// Sentinel errors.
var (
	// ErrInvalidConfig is matched by every configuration problem.
	ErrInvalidConfig = errors.New("gc: invalid config")
	// ErrStreamNotFound: the stream has no manifest; nothing is collected.
	ErrStreamNotFound = errors.New("gc: stream not found")
	// ErrNoStoreClock: the store reported no modification time for the probe object, so
	// object ages cannot be judged; nothing is deleted.
	ErrNoStoreClock = errors.New("gc: store reports no modification times")
)

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Interval <= 0 {
		bad("interval %v must be > 0", c.Interval)
	}
	if c.Interval == 0 && c.GracePeriod == 0 && c.MaxListPerPass == 0 && c.MaxDeletesPerPass == 0 {
		bad("limits are all zero: start from DefaultConfig() and change what you need")
	}
	switch {
	case c.GracePeriod <= 0:
		bad("grace period %v must be > 0", c.GracePeriod)
	case c.CommitDeadline <= 0:
		bad("commit deadline %v must be > 0 (the longest commit deadline of the producers)", c.CommitDeadline)
	default:
		if err := manifest.CheckCommitDeadline(c.CommitDeadline, c.GracePeriod); err != nil {
			bad("%w (CommitDeadline must be at least every producer's commit deadline)", err)
		}
	}
	if c.MaxListPerPass < 1 {
		bad("max list per pass %d must be >= 1", c.MaxListPerPass)
	}
	if c.MaxDeletesPerPass < 1 {
		bad("max deletes per pass %d must be >= 1", c.MaxDeletesPerPass)
	}
	if c.KeepRecent < 0 {
		bad("keep recent %v must not be negative", c.KeepRecent)
	}
	if c.ProbeReuse < 0 {
		bad("probe reuse %v must not be negative", c.ProbeReuse)
	}
	if err := c.Backoff.Validate(); err != nil {
		bad("%v", err)
	}
	return errors.Join(errs...)
}

// Report says what one pass did.
type Report struct {
	Stream         stream.Stream // the stream passed over
	EntriesDropped int           // entries retention removed from the manifest
	TrimRaisedTo   uint64        // the trim point retention raised past expired records of a sealed segment it keeps (0: not raised)
	Listed         int           // objects listed
	Referenced     int           // listed objects the manifest references
	Young          int           // unreferenced objects younger than the grace period (kept)
	Foreign        int           // listed keys that are neither batch nor segment objects, such as the probe (stream.Stream.ProbeKey), or the manifest when it lies under the data prefix (never touched)
	Deleted        int           // objects deleted
	DeleteErrors   int           // deletes that failed (retried next pass)
	Wrapped        bool          // a listing reached the end of its prefix and starts over next pass
	StreamDeleted  bool          // delete_on_empty removed the stream
}
