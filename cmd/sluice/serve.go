package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/objectstore"
)

type serveFlags struct {
	listen          string
	shutdownTimeout time.Duration
}

func newServeCmd(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the sluice daemon: health, metrics, and background work for every stream",
		Long: `Run the sluice daemon on --listen.

It serves:
  /health    200 "ok" while the store answers, 503 otherwise
  /metrics   Prometheus metrics (object store, producer, consumer, GC, Go runtime)

It shuts down cleanly on SIGINT or SIGTERM, finishing in-flight commits within
--shutdown-timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), g, f)
		},
	}
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (host:port)")
	cmd.Flags().DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long to wait for in-flight work on shutdown")
	return cmd
}

func runServe(ctx context.Context, g *globals, f *serveFlags) error {
	log, err := newLogger(g.logLevel, g.logFormat)
	if err != nil {
		return err
	}
	if f.shutdownTimeout <= 0 {
		return fmt.Errorf("invalid value %v for --shutdown-timeout: must be positive", f.shutdownTimeout)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	store, err := openStore(ctx, g.store, reg)
	if err != nil {
		return err
	}
	defer store.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		hctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if _, err := store.List(hctx, "", "", 1); err != nil {
			http.Error(w, "store unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	log.Info("sluice serving", slog.String("listen", ln.Addr().String()), slog.String("store", redactURL(g.store)))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	<-errc
	return nil
}

// openStore opens the store named by --store and instruments it into reg.
func openStore(ctx context.Context, url string, reg prometheus.Registerer) (objectstore.Store, error) {
	s, err := objectstore.Open(ctx, storeURL(url))
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", redactURL(url), err)
	}
	return s, nil
}
