package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/daemon"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

func newServeCmd(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the sluice daemon: S2's HTTP API, health, metrics, and background work",
		Long: `Run the sluice daemon on --listen.

It serves, on one port (HTTP/1.1 and cleartext HTTP/2, or TLS with --tls-cert/--tls-key):
  /v1/...    S2's REST API (basins, streams, append, read, tail, SSE and S2S sessions),
             and sluice's own consumer-group routes (/v1/streams/{s}/groups: what
             sluice consume and sluice groups use through a daemon); the same routes
             are also served without the /v1 prefix
  /health    200 "ok" while the store answers, 503 otherwise (with the store's error, or
             with --auth-token only its class; the error goes to the log, at most once
             a minute)
  /metrics   Prometheus metrics (HTTP API, object store, producers, Go runtime; and for
             each stream it serves, refreshed every --lag-interval, each consumer
             group's sluice_consumer_group_lag_records and ..._lag_seconds and the
             manifest's sluice_manifest_size_bytes, labelled basin and stream)
  /sluice/v1/commit
             commit requests of other producers and daemons (unless --no-committer)

The daemon is a committer: it takes the committer role of the streams it writes (recorded
in each stream's manifest with --advertise-url, renewed by its writes) and commits, in one
manifest write, the batches of every producer that asks it (sluice append --committer, or
any producer that finds it in the manifest). Producers still upload their own batches. If
it stops answering, they commit directly; if it dies, its role lapses after
--committer-lease (10 s), and another committer can take it. Give
--advertise-url when other machines reach it at another address than --listen's.

S2 basins map to basins/<basin>/ in the store; streams appended with the CLI without
--basin live in the root namespace (streams/).

A 5xx answer hides its cause from the client (it may name keys, the bucket, request ids):
the cause goes to the log, at error for a 500, at warn for a 503.

With --auth-token (or SLUICE_AUTH_TOKEN) every API call must carry
"Authorization: Bearer <token>": the auth token (the root token, which may do
everything) or an access token issued with it through S2's /v1/access-tokens routes,
scoped to basins, streams and operations (docs/access.md). /health and /metrics stay
open.

It shuts down cleanly on SIGINT or SIGTERM: it stops accepting calls, ends open sessions
(a live read ends with a retryable 503 unavailable, so a client does not take it as done),
and finishes in-flight commits within --shutdown-timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), g, f)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// runServe runs the daemon (package daemon) on the store --store names until ctx ends.
func runServe(ctx context.Context, g *globals, f *serveFlags) error {
	log, err := newLogger(g.logLevel, g.logFormat)
	if err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	cfg := f.config()
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	newDir := ""
	if loc, err := storeurl.Parse(storeURL(g.store)); err == nil && loc.Scheme == "file" {
		if _, err := os.Stat(loc.Dir); errors.Is(err, fs.ErrNotExist) {
			newDir = loc.Dir
		}
	}
	if cfg.Store, err = openStore(ctx, g.store, log); err != nil {
		return err
	}
	defer cfg.Store.Close()
	switch {
	case newDir != "" && g.store == defaultStore:
		log.Info("created the default store directory", "dir", newDir)
	case newDir != "":
		// A daemon may start on a new store, but a mistyped path should not pass unseen.
		log.Warn("the store directory did not exist: serving a new, empty store", "dir", newDir)
	}
	if warning, _ := checkGracePeriod("--gc-grace-period", f.gcGracePeriod); warning != "" && !f.noGC {
		log.Warn(warning)
	}
	d, err := daemon.New(ctx, cfg, daemon.WithLogger(log), daemon.WithMetrics(reg, reg))
	if le := (*daemon.ListenError)(nil); errors.As(err, &le) {
		return fmt.Errorf("--listen %s: %w", f.listen, le.Err)
	} else if err != nil {
		return err
	}
	defer d.Close(context.Background()) // a no-op once Run has returned
	log.Info("sluice serving", slog.String("listen", d.Addr().String()), slog.String("store", redactURL(g.store)),
		slog.Bool("tls", cfg.TLS != nil), slog.Bool("auth", f.authToken != ""))
	return d.Run(ctx)
}

// openStore opens the store named by --store; it logs to log.
func openStore(ctx context.Context, url string, log *slog.Logger) (objectstore.Store, error) {
	s, err := storeurl.Open(ctx, storeURL(url), storeurl.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", redactURL(url), err)
	}
	return s, nil
}
