package objectstore

import (
	"errors"
	"log/slog"
)

// ErrKeyConflict matches errors from a file store put whose key is a directory holding other
// objects, or has an object as a path prefix ("a" and "a/b" cannot both exist on a file
// system). It is a plain failure: nothing was written.
var ErrKeyConflict = errors.New("objectstore: key conflicts with another key's path")

// FileOption configures NewFileStore.
type FileOption func(*fileConfig)

type fileConfig struct {
	logger *slog.Logger
	noSync bool
}

// WithFileLogger sets the logger (default: discard).
func WithFileLogger(l *slog.Logger) FileOption { return func(c *fileConfig) { c.logger = l } }

// WithFileNoSync skips fsync of files and directories. Writes stay atomic but are no longer
// durable across a machine crash. For benchmarks and throwaway data only.
func WithFileNoSync() FileOption { return func(c *fileConfig) { c.noSync = true } }
