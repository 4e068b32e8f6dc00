package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storemetrics"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/watch"
)

// Sentinel errors.
var (
	// ErrClosed: Run was called on a daemon that is closing or closed (Close was called,
	// or an earlier Run returned).
	ErrClosed = errors.New("daemon: closed")
	// ErrRunning: Run was called while another Run is serving.
	ErrRunning = errors.New("daemon: already running")
	// ErrNotNew: Run or Close was called on a Daemon that New did not make.
	ErrNotNew = errors.New("daemon: the Daemon was not made by New")
)

// ListenError is New's error when it cannot listen on Config.Listen.
type ListenError struct {
	Addr string // Config.Listen
	Err  error
}

func (e *ListenError) Error() string { return "daemon: listen on " + e.Addr + ": " + e.Err.Error() }
func (e *ListenError) Unwrap() error { return e.Err }

// committerCloseTimeout bounds giving up the committer roles at shutdown.
const committerCloseTimeout = 5 * time.Second

// Daemon is the sluice daemon, assembled: see the package doc. New makes one; the zero
// Daemon is refused by Run and Close with ErrNotNew.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	store objectstore.Store // cfg.Store, instrumented

	ln       net.Listener
	com      *committer.Committer // nil without Config.Committer
	watch    *watch.Hub           // the readers' manifest watchers, told of the manifests written here
	eng      *engine.Engine
	gcRunner *gc.Runner // nil without Config.GC
	gcCancel context.CancelFunc
	api      *server.Server
	srv      *http.Server
	url      string // the committer's advertised URL, or ""

	// hurry is canceled to cut the shutdown short (Close's ctx ended).
	hurry       context.Context
	hurryCancel context.CancelFunc

	mu      sync.Mutex
	running bool          // Run has started
	closing bool          // Close was called, or Run is shutting down
	quit    chan struct{} // closed by Close: Run shuts down
	done    chan struct{} // closed when the shutdown has finished
	err     error         // the shutdown's outcome, set before done is closed
}

// New assembles a daemon: it listens on cfg.Listen and starts the committer, the engine and
// the collector; the HTTP API is served by Run. ctx bounds only the start (listening); the
// daemon runs until Close, or until Run's ctx ends. If New fails, it has stopped whatever
// it had started. Config and option problems are reported together, each matching
// journalCacheBytes bounds the journal windows a daemon keeps in memory for its readers
// (with Config.Journal): at 1,000 appends a second of 100 bytes, about a minute of windows.
const journalCacheBytes = 64 << 20

// ErrInvalidConfig; a listening failure is a *ListenError.
func New(ctx context.Context, cfg Config, opts ...Option) (*Daemon, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := errors.Join(cfg.Validate(), o.validate()); err != nil {
		return nil, err
	}
	sm, err := storemetrics.New(o.registerer)
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		cfg:   cfg,
		log:   o.logger,
		store: objectstore.Instrument(cfg.Store, sm),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	if cfg.Journal {
		// The committer's windows stay in memory a while: this daemon's readers fold them
		// (and read the records they carry) without a store request.
		d.store = journal.NewCache(d.store, journalCacheBytes)
	}
	d.hurry, d.hurryCancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			d.stopParts(context.Background())
			d.hurryCancel()
		}
	}()

	var lc net.ListenConfig
	if d.ln, err = lc.Listen(ctx, "tcp", cfg.Listen); err != nil {
		return nil, &ListenError{Addr: cfg.Listen, Err: err}
	}
	if cfg.Committer {
		d.url = cfg.AdvertiseURL
		if d.url == "" {
			d.url = advertisedURL(d.ln.Addr(), cfg.TLS != nil)
		}
	}
	holder := &lateHolder{}
	if d.watch, err = watchHub(&d.cfg, d.url, holder, d.log, o.registerer); err != nil {
		return nil, err
	}
	if cfg.Committer {
		if d.com, err = committer.New(committerConfig(d.store, d.watch, d.url, cfg.CommitterLease, cfg.Journal, cfg.AuthToken, d.log, o.registerer)); err != nil {
			return nil, err
		}
		holder.set(d.com)
		d.log.Info("serving as committer", slog.String("advertise_url", d.url))
	}
	if d.eng, err = engine.New(engineConfig(&d.cfg, d.store, d.watch, d.com, d.url, d.log, o.registerer)); err != nil {
		return nil, err
	}
	if cfg.GC {
		// The collector stops at once when the shutdown starts, as it runs until then.
		gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		d.gcCancel = cancel
		if d.gcRunner, err = gc.Run(gctx, gcStore(d.store), gcConfig(&d.cfg, d.log, o.registerer), gcStreams(gcStore(d.store))); err != nil {
			return nil, fmt.Errorf("garbage collection: %w", err)
		}
	}
	sopts := []server.Option{
		server.WithLogger(d.log),
		server.WithRegisterer(o.registerer),
		server.WithMaxBodyBytes(cfg.MaxBodyBytes),
	}
	if cfg.AuthToken != "" {
		// The auth token is the root token; scoped tokens are issued into the store.
		az, err := access.New(d.store, cfg.AuthToken)
		if err != nil {
			return nil, err
		}
		sopts = append(sopts, server.WithAccess(az))
	}
	if d.api, err = server.New(d.eng.S2(), sopts...); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("GET /health", healthHandler(d.store, d.log, cfg.AuthToken != ""))
	if o.gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.gatherer, promhttp.HandlerOpts{Registry: o.registerer}))
	}
	if d.com != nil {
		mux.Handle(committer.Path, d.api.Protect(d.com.Handler()))
	}
	// Followers in other processes watch the streams through the hub that this daemon's
	// commits are published to (watch.Handler), with the committers' token.
	mux.Handle(watch.Path, d.api.Protect(d.watch.Handler(d.store)))
	mux.Handle("/", d.api)
	d.srv = d.api.HTTPServer(cfg.Listen)
	d.srv.Handler = mux
	d.srv.TLSConfig = cfg.TLS
	if cfg.TLS != nil {
		d.srv.Protocols.SetHTTP2(true)
	}
	ok = true
	return d, nil
}

// Addr is the address the daemon listens on: with port 0 in Config.Listen, the port picked.
func (d *Daemon) Addr() net.Addr {
	if d.ln == nil {
		return nil // not made by New
	}
	return d.ln.Addr()
}

// CommitterURL is the URL the daemon's committer is advertised at, or "" without one.
func (d *Daemon) CommitterURL() string { return d.url }

// Run serves the HTTP API until ctx ends, Close is called, or serving fails; then it shuts
// the daemon down (see Close) and returns the serving or shutdown error, nil after a clean
// shutdown. A daemon runs once: Run after Close, or after Run returned, is ErrClosed.
func (d *Daemon) Run(ctx context.Context) error {
	if d.done == nil {
		return ErrNotNew
	}
	d.mu.Lock()
	switch {
	case d.closing:
		d.mu.Unlock()
		return ErrClosed
	case d.running:
		d.mu.Unlock()
		return ErrRunning
	}
	d.running = true
	d.mu.Unlock()

	errc := make(chan error, 1)
	go func() {
		if d.cfg.TLS != nil {
			errc <- d.srv.ServeTLS(d.ln, "", "")
		} else {
			errc <- d.srv.Serve(d.ln)
		}
	}()
	var serveErr error
	select {
	case serveErr = <-errc:
		errc = nil // the serving goroutine has returned
	case <-ctx.Done():
		d.log.Info("shutting down")
	case <-d.quit:
		d.log.Info("shutting down")
	}
	d.mu.Lock()
	d.closing = true
	d.mu.Unlock()
	d.finish(d.shutdown(serveErr, errc))
	return d.err
}

// Close shuts the daemon down and waits until every goroutine it started has returned. With
// Run serving, it makes Run shut down and waits for it; without, it stops what New started.
// The shutdown stops accepting connections and lets unary calls (appends waiting for their
// commit) finish; after a short grace it ends the sessions that would never end by
// themselves (a live read ends with a retryable 503); it drains the producers, so that every
// accepted append is committed or failed, stops the collector, and gives up the committer
// roles. It takes at most Config.ShutdownTimeout (and 5 s for the roles); if ctx ends first,
// the rest is cut short (in-flight work fails), and Close still waits for the goroutines.
// Close returns the shutdown's error (the same as Run's); a second Close returns it again.
func (d *Daemon) Close(ctx context.Context) error {
	if d.done == nil {
		return ErrNotNew
	}
	d.mu.Lock()
	first, running := !d.closing, d.running
	d.closing = true
	select {
	case <-d.quit:
	default:
		close(d.quit)
	}
	d.mu.Unlock()
	stop := context.AfterFunc(ctx, d.hurryCancel)
	defer stop()
	if first && !running {
		d.finish(d.shutdown(nil, nil))
	}
	<-d.done
	return d.err
}

// finish records the shutdown's outcome and releases the waiters.
func (d *Daemon) finish(err error) {
	d.err = err
	d.hurryCancel()
	close(d.done)
}

// shutdown stops the daemon. errc is the serving goroutine's result channel, nil when it is
// not serving (never started, or already returned serveErr).
func (d *Daemon) shutdown(serveErr error, errc chan error) error {
	if d.gcCancel != nil {
		d.gcCancel()
	}
	sctx, cancel := context.WithTimeout(d.hurry, d.cfg.ShutdownTimeout)
	defer cancel()
	// Order: stop accepting connections and let unary calls (appends waiting for their
	// commit) finish; after a short grace, end the sessions that would never end by
	// themselves (live reads); then drain the producers so that every accepted append is
	// committed or failed.
	shut := make(chan error, 1)
	go func() { shut <- d.srv.Shutdown(sctx) }()
	grace := time.NewTimer(min(2*time.Second, d.cfg.ShutdownTimeout/2))
	var shutErr error
	select {
	case shutErr = <-shut:
		d.api.Close()
	case <-grace.C:
		d.api.Close()
		shutErr = <-shut
	}
	grace.Stop()
	if shutErr != nil && !errors.Is(shutErr, http.ErrServerClosed) {
		serveErr = errors.Join(serveErr, fmt.Errorf("shutdown: %w", shutErr))
	}
	if errc != nil {
		<-errc // http.ErrServerClosed
	}
	if err := d.stopParts(sctx); err != nil {
		serveErr = errors.Join(serveErr, err)
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// stopParts drains the engine (bounded by ctx), stops the collector, gives up the committer
// roles and closes the listener: whichever of them New started.
func (d *Daemon) stopParts(ctx context.Context) error {
	var err error
	if d.eng != nil {
		err = d.eng.Close(ctx)
	}
	if d.gcRunner != nil {
		d.gcRunner.Close()
	} else if d.gcCancel != nil {
		d.gcCancel()
	}
	if d.com != nil {
		cctx, cancel := context.WithTimeout(d.hurry, committerCloseTimeout)
		defer cancel()
		if err := d.com.Close(cctx); err != nil {
			d.log.Warn("giving up the committer roles", "err", err)
		}
	}
	if d.watch != nil {
		d.watch.Close() // after the engine's readers and the committer's writes
	}
	if d.ln != nil {
		_ = d.ln.Close()
	}
	return err
}
