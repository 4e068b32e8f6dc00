package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/stream"
)

type serveFlags struct {
	listen          string
	shutdownTimeout time.Duration
	authToken       string
	tlsCert         string
	tlsKey          string
	maxBodyBytes    int64
	flushInterval   time.Duration
	deliveryTimeout time.Duration
	gcInterval      time.Duration
	gcGracePeriod   time.Duration
	noGC            bool
	advertiseURL    string
	noCommitter     bool
	lagInterval     time.Duration
}

func newServeCmd(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the sluice daemon: S2's HTTP API, health, metrics, and background work",
		Long: `Run the sluice daemon on --listen.

It serves, on one port (HTTP/1.1 and cleartext HTTP/2, or TLS with --tls-cert/--tls-key):
  /v1/...    S2's REST API (basins, streams, append, read, tail, SSE and S2S sessions);
             the same routes are also served without the /v1 prefix
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
it stops answering, they commit directly; if it dies, its role lapses after 10 s. Give
--advertise-url when other machines reach it at another address than --listen's.

S2 basins map to basins/<basin>/ in the store; streams appended with the CLI without
--basin live in the root namespace (streams/).

A 5xx answer hides its cause from the client (it may name keys, the bucket, request ids):
the cause goes to the log, at error for a 500, at warn for a 503.

With --auth-token (or SLUICE_AUTH_TOKEN) every API call must carry
"Authorization: Bearer <token>"; /health and /metrics stay open.

It shuts down cleanly on SIGINT or SIGTERM: it stops accepting calls, ends open sessions
(a live read ends with a retryable 503 unavailable, so a client does not take it as done),
and finishes in-flight commits within --shutdown-timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (host:port)")
	fl.Var(newDurationValue(&f.shutdownTimeout, 30*time.Second), "shutdown-timeout", "how long to wait for in-flight work on shutdown")
	fl.StringVar(&f.authToken, "auth-token", "", "require this bearer token on API calls (prefer SLUICE_AUTH_TOKEN: flags show in ps)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM); serve HTTPS with --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body accepted, in bytes (at least 1 MiB)")
	fl.Var(newDurationValue(&f.flushInterval, engine.DefaultConfig().Producer.FlushInterval), "flush-interval", "how long a producer collects appends into one batch object")
	fl.Var(newDurationValue(&f.deliveryTimeout, engine.DefaultDeliveryTimeout), "delivery-timeout", "how long after it arrives an append may wait to be committed (opening its stream, buffer space, upload and manifest write; not its time in the open batch) before it fails with 503 unavailable, nothing of it in the stream; one that waited over half of it to be handed to its stream's producer is refused then (one a manifest write may have committed waits for that write's outcome; 0: wait as long as the store is out)")
	fl.Var(newDurationValue(&f.gcInterval, gc.DefaultConfig().Interval), "gc-interval", "how often retention and garbage collection run over every stream")
	fl.Var(newDurationValue(&f.gcGracePeriod, gc.DefaultConfig().GracePeriod), "gc-grace-period", "minimum age (by the store's clock) of an unreferenced object before it is deleted; producers re-upload batches older than half of it ("+gracePeriodHelp+")")
	fl.StringVar(&f.advertiseURL, "advertise-url", "", "the URL other processes reach this daemon's committer at (such as http://10.0.0.5:8080); default: derived from --listen (the machine's hostname for a wildcard host)")
	fl.BoolVar(&f.noCommitter, "no-committer", false, "do not act as a committer: this daemon's writes commit directly, and it takes no commit requests")
	fl.Var(newDurationValue(&f.lagInterval, engine.DefaultLagInterval), "lag-interval", "how often the consumer group lag and manifest size gauges of the streams this daemon serves are refreshed (one conditional manifest read per stream; 0 turns them off)")
	fl.BoolVar(&f.noGC, "no-gc", false, "do not run retention and garbage collection in this daemon (run them elsewhere, e.g. sluice gc --once)")
	return cmd
}

func (f *serveFlags) validate() error {
	var errs []error
	if f.listen == "" {
		errs = append(errs, errors.New("--listen is empty: give host:port, such as 127.0.0.1:8080"))
	}
	if f.shutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --shutdown-timeout: must be positive", f.shutdownTimeout))
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key must be given together"))
	}
	if f.maxBodyBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("invalid value %d for --max-body-bytes: must be at least 1048576", f.maxBodyBytes))
	}
	if f.flushInterval < 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --flush-interval: must not be negative", f.flushInterval))
	}
	if f.lagInterval < 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --lag-interval: must not be negative", f.lagInterval))
	}
	if f.gcInterval <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --gc-interval: must be positive", f.gcInterval))
	}
	if _, err := checkGracePeriod("--gc-grace-period", f.gcGracePeriod); err != nil {
		errs = append(errs, err)
	}
	if f.advertiseURL != "" && f.noCommitter {
		errs = append(errs, errors.New("--advertise-url and --no-committer exclude each other"))
	}
	if f.advertiseURL != "" {
		if u, err := url.Parse(f.advertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("invalid value %q for --advertise-url: give the URL other processes reach this daemon at, such as http://10.0.0.5:8080", f.advertiseURL))
		}
	}
	return errors.Join(errs...)
}

func runServe(ctx context.Context, g *globals, f *serveFlags) error {
	log, err := newLogger(g.logLevel, g.logFormat)
	if err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	newDir := ""
	if loc, err := storeurl.Parse(storeURL(g.store)); err == nil && loc.Scheme == "file" {
		if _, err := os.Stat(loc.Dir); errors.Is(err, fs.ErrNotExist) {
			newDir = loc.Dir
		}
	}
	store, err := openStore(ctx, g.store, log)
	if err != nil {
		return err
	}
	defer store.Close()
	switch {
	case newDir != "" && g.store == defaultStore:
		log.Info("created the default store directory", "dir", newDir)
	case newDir != "":
		// A daemon may start on a new store, but a mistyped path should not pass unseen.
		log.Warn("the store directory did not exist: serving a new, empty store", "dir", newDir)
	}
	store = objectstore.Instrument(store, newStoreMetrics(reg))

	ecfg := engine.DefaultConfig()
	ecfg.Store = store
	ecfg.Logger = log
	ecfg.Registerer = reg
	ecfg.LagInterval = f.lagInterval
	ecfg.Producer.FlushInterval = flushInterval(f.flushInterval)
	ecfg.Producer.DeliveryTimeout = f.deliveryTimeout
	// GC safety: a producer never commits an upload older than half the grace period.
	ecfg.Producer.CommitDeadline = f.gcGracePeriod / 2
	if warning, _ := checkGracePeriod("--gc-grace-period", f.gcGracePeriod); warning != "" && !f.noGC {
		log.Warn(warning)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	defer ln.Close() // in case the server never takes it
	var com *committer.Committer
	if !f.noCommitter {
		advertise := f.advertiseURL
		if advertise == "" {
			advertise = advertisedURL(ln.Addr(), tlsCfg != nil)
		}
		ccfg := committer.DefaultConfig()
		ccfg.Store, ccfg.ID, ccfg.URL = store, "serve-"+randomHex(8), advertise
		ccfg.Logger, ccfg.Registerer = log, reg
		if com, err = committer.New(ccfg); err != nil {
			return err
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := com.Close(cctx); err != nil {
				log.Warn("giving up the committer roles", "err", err)
			}
		}()
		// Its own streams' commits go to it in process; others' to the daemon holding the
		// role, with the token the daemons of one deployment share.
		ecfg.Producer.Committer.URL, ecfg.Producer.Committer.Local = advertise, com
		log.Info("serving as committer", slog.String("advertise_url", advertise))
	}
	ecfg.Producer.Committer.Token = f.authToken // for other daemons' committers
	eng, err := engine.New(ecfg)
	if err != nil {
		return err
	}
	var gcRunner *gc.Runner
	if !f.noGC {
		gcfg := gc.DefaultConfig()
		gcfg.Interval = f.gcInterval
		gcfg.GracePeriod = f.gcGracePeriod
		gcfg.CommitDeadline = ecfg.Producer.CommitDeadline
		gcfg.Logger = log
		gcfg.Registerer = reg
		gcRunner, err = gc.Run(ctx, store, gcfg, func(ctx context.Context) ([]stream.Stream, error) {
			all, err := gcStreams(ctx, store)
			if err != nil {
				return nil, err
			}
			out := make([]stream.Stream, len(all))
			for i, st := range all {
				out[i] = st
			}
			return out, nil
		})
		if err != nil {
			eng.Close(ctx)
			return fmt.Errorf("garbage collection: %w", err)
		}
		defer gcRunner.Close()
	}
	opts := []server.Option{
		server.WithLogger(log),
		server.WithRegisterer(reg),
		server.WithMaxBodyBytes(f.maxBodyBytes),
	}
	if f.authToken != "" {
		opts = append(opts, server.WithBearerToken(f.authToken))
	}
	api, err := server.New(eng.S2(), opts...)
	if err != nil {
		eng.Close(ctx)
		return err
	}

	mux := http.NewServeMux()
	var healthLogged atomic.Int64 // when the last failed check was logged (Unix ns)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		hctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if _, err := store.List(hctx, "", "", 1); err != nil {
			// The error goes to the log at most once a minute, however often a prober asks.
			if now, last := time.Now().UnixNano(), healthLogged.Load(); now-last >= int64(time.Minute) && healthLogged.CompareAndSwap(last, now) {
				log.Warn("health check: store unavailable (logged at most once a minute)", slog.Any("err", err))
			}
			if f.authToken != "" {
				// /health is open to all; with the API closed to strangers, its answer must
				// not name the bucket, prefix or endpoint.
				http.Error(w, "store unavailable ("+objectstore.ErrorClass(err)+"; the daemon's log has the error)", http.StatusServiceUnavailable)
				return
			}
			http.Error(w, "store unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if com != nil {
		mux.Handle(committer.Path, api.Protect(com.Handler()))
	}
	mux.Handle("/", api)

	srv := api.HTTPServer(f.listen)
	srv.Handler = mux
	srv.TLSConfig = tlsCfg
	if tlsCfg != nil {
		srv.Protocols.SetHTTP2(true)
	}
	log.Info("sluice serving", slog.String("listen", ln.Addr().String()), slog.String("store", redactURL(g.store)),
		slog.Bool("tls", tlsCfg != nil), slog.Bool("auth", f.authToken != ""))

	errc := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
		log.Info("shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	// Order: stop accepting connections and let unary calls (appends waiting for their
	// commit) finish; after a short grace, end the sessions that would never end by
	// themselves (live reads); then drain the producers so that every accepted append is
	// committed or failed.
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	grace := time.NewTimer(min(2*time.Second, f.shutdownTimeout/2))
	var shutErr error
	select {
	case shutErr = <-shut:
		api.Close()
	case <-grace.C:
		api.Close()
		shutErr = <-shut
	}
	grace.Stop()
	if shutErr != nil && !errors.Is(shutErr, http.ErrServerClosed) {
		serveErr = errors.Join(serveErr, fmt.Errorf("shutdown: %w", shutErr))
	}
	if serveErr == nil {
		<-errc
	}
	if err := eng.Close(sctx); err != nil {
		serveErr = errors.Join(serveErr, err)
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// openStore opens the store named by --store; it logs to log.
func openStore(ctx context.Context, url string, log *slog.Logger) (objectstore.Store, error) {
	s, err := storeurl.Open(ctx, storeURL(url), storeurl.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", redactURL(url), err)
	}
	return s, nil
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}
