package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/committer/commitclient"
)

// Config configures a Hub. Start from DefaultConfig.
type Config struct {
	// MinInterval is a watcher's first interval between polls, and the interval after a poll
	// that found a change. Default 100 ms (the consumers' poll interval before watchers).
	MinInterval time.Duration
	// MaxInterval bounds the interval, which doubles after every poll that found no change:
	// a change made in another process is seen at most MaxInterval plus one GET after the
	// store shows it. Default 1 s; at least MinInterval.
	MaxInterval time.Duration
	// ErrorAttempts is how many failed polls in a row (other than a missing or corrupt
	// manifest) are returned to the subscribers, as the last failure. Default 5; at least 1.
	ErrorAttempts int
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the hub's metrics (sluice_watch_*). Default nil: kept but not
	// registered. Hubs sharing a registerer share the collectors.
	Registerer prometheus.Registerer
	// Remote, when enabled, has the watchers follow a stream through its committer's watch
	// endpoint (another process's daemon) instead of polling the store (see the package
	// doc, "Remote watches"). Default: off.
	Remote RemoteConfig
	// ServeHold bounds how long Handler holds a watch request that finds nothing newer
	// before it answers "unchanged" (so that proxies do not cut it). Default 25 s.
	ServeHold time.Duration
	// Holder, if set, is the committer of this process (see the package doc, "Streams held
	// here"): a watcher asks it to hold its stream's role when it starts, and polls only every
	// HeldInterval while the role is held here. Default nil: none.
	Holder Holder
	// HeldInterval is the interval of the store polls of a stream whose role this process's
	// committer holds (it publishes every commit of it): the bound of the staleness if a
	// publish were lost. Default 2 min; at least MaxInterval.
	HeldInterval time.Duration
	// ServeLinger is how long Handler keeps its subscription to a stream after answering,
	// so that the follower's next request finds the stream's watcher with its view (no
	// store read) rather than starting another. Default 5 s; 0: none.
	ServeLinger time.Duration
}

// RemoteConfig configures the remote watches of a Hub's watchers.
type RemoteConfig struct {
	// Enabled turns remote watches on.
	Enabled bool
	// Committer says where to watch, as writers say where to commit (package
	// commitclient): the committer the manifest names while its role is live, else
	// Committer.URL; with neither, the holder of a lapsed role (it still sees the
	// stream's commits). Committer.Token is the bearer token of the watch endpoint (the
	// committers' API token). Its other fields are not used.
	Committer commitclient.Config
	// Client makes the watch requests. Default: a client of its own with no timeout (each
	// request is bounded by the server's hold plus RequestSlack).
	Client *http.Client
	// Self is this process's own watch endpoint (a daemon's advertised URL): never
	// watched, as the process's own commits are published to its hub. Default "".
	Self string
	// SafetyInterval is the interval of the store polls while a remote watch answers: the
	// bound of the staleness if the committer answered wrongly. Default 10 s; at least
	// MaxInterval.
	SafetyInterval time.Duration
	// RetryAfter is how long the store is polled (on the usual intervals) after a remote
	// watch failed, before the committer is watched again. Default 5 s.
	RetryAfter time.Duration
	// RequestSlack is added to the server's hold (ServeHold's default) to bound one watch
	// request. Default 10 s.
	RequestSlack time.Duration
}

// DefaultServeHold is Config.ServeHold's default.
const DefaultServeHold = 25 * time.Second

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		MinInterval:   100 * time.Millisecond,
		MaxInterval:   time.Second,
		ErrorAttempts: 5,
		Logger:        slog.New(slog.DiscardHandler),
		Remote: RemoteConfig{
			SafetyInterval: 10 * time.Second,
			RetryAfter:     5 * time.Second,
			RequestSlack:   10 * time.Second,
		},
		ServeHold:    DefaultServeHold,
		ServeLinger:  5 * time.Second,
		HeldInterval: 2 * time.Minute,
	}
}

// Holder is a committer in the process of a Hub (a journal committer: *committer.Committer).
// While it holds a stream's role every commit of the stream passes through it, and it
// publishes each one to the hub (Hub.PublishTail), so the stream's watcher need not poll.
type Holder interface {
	// Hold takes the role of the stream whose manifest is key, if no other live committer
	// holds it; it reports whether the role is held here afterwards.
	Hold(ctx context.Context, key string) bool
	// Holds reports whether the role of key's stream is held here now.
	Holds(key string) bool
}

// ErrInvalidConfig is matched by every problem New reports.
var ErrInvalidConfig = errors.New("watch: invalid config")

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.MinInterval <= 0 {
		bad("min interval %v must be > 0", c.MinInterval)
	}
	if c.MaxInterval < c.MinInterval {
		bad("max interval %v must be >= min interval %v", c.MaxInterval, c.MinInterval)
	}
	if c.ErrorAttempts < 1 {
		bad("error attempts %d must be >= 1", c.ErrorAttempts)
	}
	if c.ServeHold <= 0 {
		bad("serve hold %v must be > 0", c.ServeHold)
	}
	if c.Holder != nil && c.HeldInterval < c.MaxInterval {
		bad("held interval %v must be >= max interval %v", c.HeldInterval, c.MaxInterval)
	}
	if c.ServeLinger < 0 {
		bad("serve linger %v must not be negative", c.ServeLinger)
	}
	if r := &c.Remote; r.Enabled {
		if err := r.Committer.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: remote committer: %w", ErrInvalidConfig, err))
		}
		if r.SafetyInterval < c.MaxInterval {
			bad("remote safety interval %v must be >= max interval %v", r.SafetyInterval, c.MaxInterval)
		}
		if r.RetryAfter <= 0 {
			bad("remote retry-after %v must be > 0", r.RetryAfter)
		}
		if r.RequestSlack <= 0 {
			bad("remote request slack %v must be > 0", r.RequestSlack)
		}
	}
	if c.Logger == nil {
		bad("logger is nil (use slog.New(slog.DiscardHandler))")
	}
	return errors.Join(errs...)
}
