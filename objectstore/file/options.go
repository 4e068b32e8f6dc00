package file

import (
	"errors"
	"log/slog"
)

// ErrKeyConflict matches errors from a file store put whose key is a directory holding other
// objects, or has an object as a path prefix ("a" and "a/b" cannot both exist on a file
// system). It is a plain failure: nothing was written.
var ErrKeyConflict = errors.New("file: key conflicts with another key's path")

// Option configures New.
type Option func(*config)

type config struct {
	logger *slog.Logger
	noSync bool
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithNoSync skips fsync of files and directories. Writes stay atomic but are no longer
// durable across a machine crash. For benchmarks and throwaway data only.
func WithNoSync() Option { return func(c *config) { c.noSync = true } }
