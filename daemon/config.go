package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/server"
)

// Config configures a Daemon: what `sluice serve`'s flags set. Start from DefaultConfig; every
// field's zero value either has the meaning its comment gives or is refused by New.
type Config struct {
	// Store holds every stream. Required. The daemon does not close it: the caller closes it
	// after Close.
	Store objectstore.Store
	// Listen is the TCP address (host:port) to listen on; port 0 picks a free one (see
	// Daemon.Addr). Required.
	Listen string
	// TLS, if not nil, serves HTTPS (HTTP/1.1 and HTTP/2) with it; nil serves cleartext
	// HTTP/1.1 and HTTP/2 (prior knowledge) on the one port.
	TLS *tls.Config
	// AuthToken, if not empty, is required as "Authorization: Bearer <token>" on every API
	// call and commit request (/health and /metrics stay open), and is sent to other daemons'
	// committers. Empty: the API is open.
	AuthToken string
	// MaxBodyBytes bounds a unary request body. At least 1 MiB.
	MaxBodyBytes int64
	// ShutdownTimeout bounds the shutdown: in-flight calls, open sessions and the drain of
	// the producers. Must be positive.
	ShutdownTimeout time.Duration
	// FlushInterval is how long a stream's producer collects appends into one batch object:
	// positive, or producer.FlushEveryAppend to flush each append at once (0 is refused).
	FlushInterval time.Duration
	// DeliveryTimeout is how long after it arrives an append may wait to be committed
	// before it fails with 503 unavailable (see engine.DefaultDeliveryTimeout); 0 waits as
	// long as the store is out. Must not be negative.
	DeliveryTimeout time.Duration
	// LagInterval is how often the consumer group lag and manifest size gauges of the
	// streams the daemon serves are refreshed; 0 turns them off. Must not be negative.
	LagInterval time.Duration
	// Committer makes the daemon a committer: it takes the committer role of the streams it
	// writes, commits other producers' batches sent to it, and serves committer.Path. False:
	// its writes commit directly and it takes no commit requests.
	Committer bool
	// AdvertiseURL is the URL other processes reach the committer at; empty derives it from
	// the listening address (the machine's hostname for a wildcard host). Only with
	// Committer; an http or https URL with a host.
	AdvertiseURL string
	// CommitterLease is how long each of the committer's writes holds a stream's committer
	// role: after the committer stops answering (dead, paused, cut off), a committer at
	// another URL can take the role this long after its last write. With Committer:
	// positive, and less than the committer's idle timeout (committer.DefaultConfig's, 1
	// min), so the role has lapsed when a stream's loop ends.
	CommitterLease time.Duration
	// Journal makes the committer commit through a journal (docs/journal.md): one object per
	// commit window for every stream it writes, acknowledged once durable, and this daemon's
	// appends carry their records in it instead of uploading a batch object each. A stream's
	// manifest is then written every 30 s while it has new commits (a checkpoint) rather
	// than at every commit, whatever CommitterLease: the role is not renewed by writes, and
	// another daemon that finds it lapsed asks this one (a probe) before taking the stream,
	// so a live daemon keeps its streams and a dead one's are taken CommitterLease after
	// its last write. Only with Committer.
	Journal bool
	// GC runs retention and garbage collection over every stream of the store in the daemon.
	GC bool
	// GCInterval is how often a collection round starts. Must be positive with GC.
	GCInterval time.Duration
	// GCGracePeriod is the minimum age of an unreferenced object before the collector
	// deletes it; the daemon's producers give up on an upload after half of it (with or
	// without GC, since another process may collect), which must pass
	// manifest.CheckCommitDeadline: more than 0 and less than twice manifest.ProducerExpiry.
	GCGracePeriod time.Duration
}

// DefaultConfig returns `sluice serve`'s defaults: listen on 127.0.0.1:8080, a committer,
// garbage collection on, and the engine's, server's and collector's defaults. Store is nil.
func DefaultConfig() Config {
	ecfg := engine.DefaultConfig()
	gcfg := gc.DefaultConfig()
	return Config{
		Listen:          "127.0.0.1:8080",
		MaxBodyBytes:    server.DefaultMaxBodyBytes,
		ShutdownTimeout: 30 * time.Second,
		FlushInterval:   ecfg.Producer.FlushInterval,
		DeliveryTimeout: engine.DefaultDeliveryTimeout,
		LagInterval:     engine.DefaultLagInterval,
		Committer:       true,
		CommitterLease:  committer.DefaultConfig().Lease,
		GC:              true,
		GCInterval:      gcfg.Interval,
		GCGracePeriod:   gcfg.GracePeriod,
	}
}

// ErrInvalidConfig is matched by every problem New reports about its Config and options.
var ErrInvalidConfig = errors.New("daemon: invalid config")

// Validate reports every problem at once, each matching ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Store == nil {
		bad("Store is nil")
	}
	if c.Listen == "" {
		bad("Listen is empty: give host:port, such as 127.0.0.1:8080 (port 0 picks one)")
	}
	if c.MaxBodyBytes < 1<<20 {
		bad("MaxBodyBytes %d must be at least 1048576", c.MaxBodyBytes)
	}
	if c.ShutdownTimeout <= 0 {
		bad("ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	}
	if c.FlushInterval <= 0 && c.FlushInterval != producer.FlushEveryAppend {
		bad("FlushInterval %v must be positive, or producer.FlushEveryAppend", c.FlushInterval)
	}
	if c.DeliveryTimeout < 0 {
		bad("DeliveryTimeout %v must not be negative", c.DeliveryTimeout)
	}
	if c.LagInterval < 0 {
		bad("LagInterval %v must not be negative", c.LagInterval)
	}
	if c.GC && c.GCInterval <= 0 {
		bad("GCInterval %v must be positive", c.GCInterval)
	}
	// The daemon's producers give up on an upload after half the grace period.
	if err := manifest.CheckCommitDeadline(c.GCGracePeriod/2, c.GCGracePeriod); err != nil {
		bad("GCGracePeriod %v: %v", c.GCGracePeriod, err)
	}
	if idle := committer.DefaultConfig().IdleTimeout; c.Committer && (c.CommitterLease <= 0 || c.CommitterLease >= idle) {
		bad("CommitterLease %v must be positive and less than the committer's idle timeout %v", c.CommitterLease, idle)
	}
	if c.Journal && !c.Committer {
		bad("Journal is set without Committer")
	}
	if c.AdvertiseURL != "" {
		if !c.Committer {
			bad("AdvertiseURL is set without Committer")
		}
		if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("AdvertiseURL %q is not an http or https URL with a host, such as http://10.0.0.5:8080", c.AdvertiseURL)
		}
	}
	return errors.Join(errs...)
}

// Option sets what the daemon reports to: its logger and its metrics.
type Option func(*options)

type options struct {
	logger     *slog.Logger
	registerer prometheus.Registerer
	gatherer   prometheus.Gatherer
}

func defaultOptions() options {
	reg := prometheus.NewRegistry()
	return options{logger: slog.New(slog.DiscardHandler), registerer: reg, gatherer: reg}
}

// WithLogger sends the daemon's logs (and those of its engine, committer, collector and
// server) to l. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMetrics registers the daemon's metrics (HTTP API, object store, producers, readers,
// committer, collector) on reg, and serves g on /metrics; a nil g serves no /metrics. reg
// must not be nil, and must not hold another daemon's metrics. Default: a registry of the
// daemon's own, served on /metrics.
func WithMetrics(reg prometheus.Registerer, g prometheus.Gatherer) Option {
	return func(o *options) { o.registerer, o.gatherer = reg, g }
}

func (o *options) validate() error {
	var errs []error
	if o.logger == nil {
		errs = append(errs, fmt.Errorf("%w: logger is nil", ErrInvalidConfig))
	}
	if o.registerer == nil {
		errs = append(errs, fmt.Errorf("%w: metrics registerer is nil", ErrInvalidConfig))
	}
	return errors.Join(errs...)
}
