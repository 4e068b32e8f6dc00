package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-dev/sluice/daemon"
	"github.com/sluice-dev/sluice/objectstore"
)

// daemonModes maps a mode of StreamsConfig.Mode to how it changes the daemon's config from
// daemon.DefaultConfig (what `sluice serve` runs). A new way of committing is compared with
// today's by adding its name here.
var daemonModes = map[string]func(*daemon.Config){
	// manifest: today's path, each stream's commits written to its own manifest.
	"manifest": func(*daemon.Config) {},
	// journal: the committer's journal (docs/journal.md), one window object for every
	// stream; manifests are checkpointed every 30 s, with the default lease.
	"journal": func(c *daemon.Config) { c.Journal = true },
}

// DaemonModes lists the modes StreamsConfig.Mode takes, sorted.
func DaemonModes() []string {
	names := make([]string, 0, len(daemonModes))
	for n := range daemonModes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Defaults of StreamsConfig.
const (
	DefaultMaxInFlight   = 10000
	DefaultAppendTimeout = 10 * time.Second
	// LateAfter is how far past its due time an append may be sent before it counts as late.
	LateAfter = 10 * time.Millisecond
	// createParallelism is how many streams are created at once before a row.
	createParallelism = 32
	// closeTimeout bounds the daemon's shutdown at the end of a row.
	daemonCloseTimeout = time.Minute
)

// StreamsConfig is one row of a many-streams run: Streams streams on one daemon sharing Rate
// appends a second, each append one record of RecordBytes bytes through the S2 JSON API.
type StreamsConfig struct {
	// Streams is the number of streams; append k goes to stream k mod Streams.
	Streams int
	// Mode is the daemon's mode, one of DaemonModes.
	Mode string
	// Rate is appends per second over all streams, sent on schedule (open loop).
	Rate float64
	// Warmup is sent first and not counted; Duration is the measured window after it.
	Warmup, Duration time.Duration
	// RecordBytes is each record's body.
	RecordBytes int
	// StoreLatency is added to each store request each way (DelayStore); 0 adds none.
	StoreLatency time.Duration
	// MaxInFlight bounds the appends awaiting their answer; at the bound, sends wait (and
	// count as late). Default DefaultMaxInFlight.
	MaxInFlight int
	// AppendTimeout is how long an append waits for its answer before it counts as a
	// timeout. Default DefaultAppendTimeout.
	AppendTimeout time.Duration
	// Progress, if set, receives a line per second and one per phase.
	Progress io.Writer
	// Logger receives the daemon's logs; nil discards them.
	Logger *slog.Logger
}

// ErrInvalidStreamsConfig is matched by every problem StreamsConfig.Validate reports.
var ErrInvalidStreamsConfig = errors.New("bench: invalid streams config")

// Validate reports every problem of c at once.
func (c *StreamsConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidStreamsConfig}, args...)...))
	}
	if c.Streams < 1 {
		bad("streams %d must be at least 1", c.Streams)
	}
	if _, ok := daemonModes[c.Mode]; !ok {
		bad("mode %q is not one of %v", c.Mode, DaemonModes())
	}
	if c.Rate <= 0 {
		bad("rate %v must be positive", c.Rate)
	}
	if c.Duration <= 0 || c.Warmup < 0 {
		bad("duration %v must be positive and warmup %v not negative", c.Duration, c.Warmup)
	}
	if c.RecordBytes < 1 || c.RecordBytes > MaxRecordSize {
		bad("record bytes %d must be 1 to %d", c.RecordBytes, MaxRecordSize)
	}
	if c.StoreLatency < 0 || c.MaxInFlight < 0 || c.AppendTimeout < 0 {
		bad("store latency %v, max in flight %d and append timeout %v must not be negative", c.StoreLatency, c.MaxInFlight, c.AppendTimeout)
	}
	return errors.Join(errs...)
}

// RunStreams runs one row on store, a fresh store the caller closes and removes afterwards:
// it starts a daemon in this process on StoreLatency delays over store, creates the
// streams through its API (not counted), sends appends on schedule for Warmup+Duration,
// waits for the answers of those in flight (each at most AppendTimeout), closes the
// daemon, and returns the figures of the measured window. Every goroutine it started has
// returned when it returns. When ctx ends early it stops, cleans up and returns what it
// measured with Interrupted set.
func RunStreams(ctx context.Context, store objectstore.Store, cfg StreamsConfig) (row *StreamsRow, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.AppendTimeout == 0 {
		cfg.AppendTimeout = DefaultAppendTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sr := newStreamsRun(cfg)
	sr.mem.reset()
	counted := objectstore.Instrument(DelayStore(nopCloser{store}, cfg.StoreLatency), &sr.ops)

	dcfg := daemon.DefaultConfig()
	dcfg.Store, dcfg.Listen = counted, "127.0.0.1:0"
	daemonModes[cfg.Mode](&dcfg)
	d, err := daemon.New(ctx, dcfg, daemon.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("bench: starting the daemon: %w", err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(context.WithoutCancel(ctx)) }()
	defer func() {
		sr.progressf("closing the daemon")
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), daemonCloseTimeout)
		defer cancel()
		cerr := d.Close(cctx)
		<-runErr
		sr.client.CloseIdleConnections()
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("bench: closing the daemon: %w", cerr))
		}
	}()
	sr.api = "http://" + d.Addr().String() + "/v1"
	if err := sr.create(ctx); err != nil {
		if ctx.Err() != nil {
			return &StreamsRow{Streams: cfg.Streams, Mode: cfg.Mode, Interrupted: true}, nil
		}
		return nil, err
	}
	sr.load(ctx)
	return sr.row(ctx.Err() != nil), nil
}

// nopCloser keeps the daemon's layers from closing the caller's store.
type nopCloser struct{ objectstore.Store }

func (nopCloser) Close() error { return nil }

// newClient is the S2 clients' HTTP: HTTP/2 over cleartext (the daemon serves it with prior
// knowledge), opening more connections when one's streams are taken.
func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr.Protocols = &p
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr}
}
