package main

// The stream and basin commands work on one of two backends: the store named by --store
// (library mode, storeBackend) or a daemon's S2 API named by --endpoint (apiBackend). The
// commands parse their flags and format their output once; a backend does the operations.

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/s2api"
)

// cmdBackend is what the stream and basin commands need of a store or a daemon. Its errors are
// worded for the user: they name the stream, basin, store or daemon at fault.
type cmdBackend interface {
	// createStream creates a stream (and, on a store, its basin's marker if missing).
	createStream(ctx context.Context, name string, cfg manifest.Config) error
	// streamConfig returns a stream's configuration; with change, it first changes it
	// (change reports manifest.ErrNoChange when nothing changes).
	streamConfig(ctx context.Context, name string, change func(*manifest.Config) error) (manifest.Config, error)
	// listStreams calls emit for the streams, in name order, at most limit (0: all).
	listStreams(ctx context.Context, prefix, startAfter string, limit int, emit func(s2api.StreamInfo) error) error
	// deleteStream deletes a stream; objects is how many objects went (nil when unknown).
	deleteStream(ctx context.Context, name string) (objects *int, err error)
	createBasin(ctx context.Context, name string) (s2api.BasinInfo, error)
	listBasins(ctx context.Context, prefix, startAfter string, limit int, emit func(s2api.BasinInfo) error) error
	deleteBasin(ctx context.Context, name string) error
	// tail returns the stream's tail.
	tail(ctx context.Context, name string) (positionJSON, error)
	// appendSync appends one input (fence, trim) and returns its ack.
	appendSync(ctx context.Context, name string, in batchfmt.AppendInput) (ackJSON, error)
	// openAppender opens a pipeline of appends to a stream, creating it first with create.
	openAppender(ctx context.Context, name string, o appendOptions) (appender, error)
	// openRead opens a read of a stream.
	openRead(ctx context.Context, name string, req consumer.ReadRequest) (recordSession, error)
	close()
}

// appendOptions are append's settings that a backend applies.
type appendOptions struct {
	create          bool
	deliveryTimeout time.Duration
	committer       string // store only: a committer's URL
	committerToken  string
	// committerTimeout: store only, the wait for a committer's answer (0: the default).
	committerTimeout time.Duration
}

// appender sends appends in order; each submit's ack comes from its waiter.
type appender interface {
	submit(in batchfmt.AppendInput) (ackWaiter, error)
	// close drains the appends submitted and releases the appender.
	close() error
}

// ackWaiter is one submitted append's ack, or why it failed.
type ackWaiter interface {
	wait() (ackJSON, error)
}

// recordSession is an open read: next returns the next records, consumer.ErrDone at its
// end, or an error worded for the user.
type recordSession interface {
	next(ctx context.Context) ([]consumer.SequencedRecord, error)
	close()
}

// daemonAnnotation marks the commands that work through a daemon (--endpoint) as well as on
// a store.
const daemonAnnotation = "sluice_daemon"

// throughDaemon marks cmd (and its subcommands) as working through a daemon too.
func throughDaemon(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[daemonAnnotation] = "true"
	return cmd
}

// goesThroughDaemon reports whether cmd or a parent is marked by throughDaemon.
func goesThroughDaemon(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[daemonAnnotation] != "" {
			return true
		}
	}
	return false
}

// ignoresEndpoint reports whether cmd is one that --endpoint does not concern: it manages its
// own endpoint (token, bench), or needs none (serve, version, help, the root).
func ignoresEndpoint(cmd *cobra.Command) bool {
	for c := cmd; c.HasParent(); c = c.Parent() {
		if !c.Parent().HasParent() { // a top-level command
			switch c.Name() {
			case "serve", "version", "help", "token", "bench", "completion":
				return true
			}
			return false
		}
	}
	return true
}

// checkMode refuses a store-only command when --endpoint is set, and --endpoint with --store
// for the commands that go through a daemon. It runs after the flags are read (command line,
// environment, file).
func checkMode(cmd *cobra.Command, g *globals) error {
	switch {
	case g.endpoint == "" || ignoresEndpoint(cmd):
		return nil
	case !goesThroughDaemon(cmd):
		return fmt.Errorf("%s works on a store, not through a daemon: --endpoint (or SLUICE_ENDPOINT) is set to %s; run it with --store where the store is reachable, with SLUICE_ENDPOINT unset (through a daemon: basin, stream, append, read, tail, trim, fence, consume, groups)",
			cmd.CommandPath(), redactURL(g.endpoint))
	}
	if f := cmd.Flags().Lookup("store"); f != nil && f.Changed {
		return fmt.Errorf("--store and --endpoint exclude each other: --endpoint sends the command to a daemon, which has its own store")
	}
	return nil
}

// openBackend opens the backend of a command: the daemon when --endpoint is set, else the
// store. basin is the command's --basin (nil for the basin commands). The caller closes it.
func openBackend(ctx context.Context, g *globals, basin *string) (cmdBackend, error) {
	if g.endpoint != "" {
		return newAPIBackend(g, basin)
	}
	e, err := openLib(ctx, g, basin)
	if err != nil {
		return nil, err
	}
	return &storeBackend{e: e}, nil
}
