package watch

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		MinInterval:   100 * time.Millisecond,
		MaxInterval:   time.Second,
		ErrorAttempts: 5,
		Logger:        slog.New(slog.DiscardHandler),
	}
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
	if c.Logger == nil {
		bad("logger is nil (use slog.New(slog.DiscardHandler))")
	}
	return errors.Join(errs...)
}
