// Command sluice is the command line and the daemon of sluice, an ingest buffer on object storage.
//
// Every flag can also be set with an environment variable SLUICE_<FLAG> (upper case, '-' as '_';
// for example SLUICE_STORE; an empty variable counts as unset) or in a YAML file named by --config / SLUICE_CONFIG whose keys are the
// flag names. A flag on the command line wins over the environment, which wins over the file,
// which wins over the default. S3 credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance roles, ...).
//
// Commands: serve (the daemon) and, in library mode (working on the store named by --store
// directly, no daemon needed): append, read, tail, stream create|list|delete|config, basin
// create|list|delete, fence, trim, inspect, gc --once and consume; token issue|list|revoke
// manages a daemon's access tokens through its API (--endpoint, --token). With --endpoint, the
// basin and stream commands, append, read, tail, trim and fence go through the daemon's S2 API
// instead (see backend.go); the others refuse it. The commands print
// JSON (one value per line for streams of values) on stdout, logs and errors on stderr, and
// exit 0 on success, 1 on any failure with one line "sluice: <what went wrong>" naming the
// flag, value or stream at fault.
//
// This package only wires: flags, configuration, logging and metrics. Queue logic lives in the
// library packages.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, stop catching them: a second SIGINT ends the process at once.
	go func() { <-ctx.Done(); stop() }()
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes the command line and returns the process exit code.
func run(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// One line, as scripts expect: errors joined by errors.Join (every bad flag at once) or
	// from YAML come with newlines.
	fmt.Fprintln(os.Stderr, "sluice:", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
	return 1
}
