// Package engine runs many streams of one object store for the daemon: it creates, lists,
// reconfigures and deletes streams and basins (laid out by stream.Locate, listed by package
// catalog), keeps one shared producer per stream that is being appended to, and answers tail
// and read requests.
//
// An Engine is what `sluice serve` serves. Its S2 method returns the server.Backend that S2's
// HTTP API is built on. Library users who embed a producer or consumer do not need it.
//
// Producers are opened lazily on the first append to a stream and closed (drained) after
// IdleTimeout without appends, when the stream is deleted, and on Close. Several engines (on
// several machines) may serve the same store at once: every change goes through the manifest's
// conditional writes, so they never lose each other's writes.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// DefaultDeliveryTimeout is the daemon's producer.Config.DeliveryTimeout: an append not
// committed this long after the daemon received it (the store refusing or not answering its
// batch, or its stream's producer slow to open) fails with a 503 that says nothing of it is
// in the stream (so a client may resend it without writing it twice), instead of waiting,
// and holding its buffer space, for as long as the store is out. It is under the 5 s after
// which S2's SDKs give up on an append session's ack and resend the append (their default
// retry policy), so that such a client has been told the append failed before it resends
// it: with a longer bound, an outage of more than 5 s wrote those appends twice. The engine
// passes each append's arrival to its producer (producer.ReceivedAt), so the bound
// covers the producer's open and the wait for buffer space as well as the batch (not the
// append's time in the open batch, at most the flush interval); an append that waited more
// than half of it to be handed over is refused then.
const DefaultDeliveryTimeout = 4 * time.Second

// Config configures an Engine. Start from DefaultConfig.
type Config struct {
	// Store holds every stream. Required.
	Store objectstore.Store
	// Producer is the template for the per-stream producers; its ObjectStore, Stream,
	// CreateStream, Logger and Registerer are set by the engine.
	Producer producer.Config
	// Consumer is the template for the per-stream readers; its ObjectStore, Stream,
	// Notifier, Watch, Logger and Registerer are set by the engine: the followers of a
	// stream share one manifest watcher (package watch, default intervals), which the
	// stream's appends through this engine wake.
	Consumer consumer.Config
	// IdleTimeout closes a stream's producer after this long without appends. Must be > 0.
	IdleTimeout time.Duration
	// Logger receives operational logs. Default: discard (nil discards too).
	Logger *slog.Logger
	// Registerer receives the engine's metrics, and those of its producers and readers:
	// each open producer's, labelled with its basin and stream (and its producer id) and
	// removed when it closes; the readers' summed over every stream. Default nil.
	Registerer prometheus.Registerer
	// Now is the engine's clock. Default time.Now (nil is time.Now too).
	Now func() time.Time
	// Watch is the hub of the followers' manifest watchers (package watch). The engine's
	// readers share it, and its producers write through watch.PublishingStore, so that a
	// commit they make wakes the stream's readers with no store read; give the same hub to
	// the process's committer (its store wrapped likewise). Default nil: the engine makes
	// one with the default intervals, its Logger and Registerer, and closes it on Close.
	Watch *watch.Hub
	// LagInterval is how often, with a Registerer, the engine refreshes the gauges of the
	// streams it serves (an open producer or reader): each consumer group's
	// sluice_consumer_group_lag_records and ..._lag_seconds (labels basin, stream, group)
	// and sluice_manifest_size_bytes (basin, stream). Default DefaultLagInterval; 0 turns
	// them off.
	LagInterval time.Duration
}

// DefaultConfig returns the defaults: producers with opendata Buffer's defaults but a 10 ms
// flush interval (an HTTP append waits for its commit, so the daemon favours latency) and a
// delivery timeout of DefaultDeliveryTimeout, and a one-minute idle timeout.
func DefaultConfig() Config {
	pc := producer.DefaultConfig()
	pc.FlushInterval = 10 * time.Millisecond
	pc.DeliveryTimeout = DefaultDeliveryTimeout
	return Config{
		Producer:    pc,
		Consumer:    consumer.DefaultConfig(),
		IdleTimeout: time.Minute,
		Logger:      slog.New(slog.DiscardHandler),
		Now:         time.Now,
		LagInterval: DefaultLagInterval,
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("engine: Store is nil"))
	}
	if c.IdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("engine: IdleTimeout %v must be positive", c.IdleTimeout))
	}
	if c.LagInterval < 0 {
		errs = append(errs, fmt.Errorf("engine: LagInterval %v must not be negative", c.LagInterval))
	}
	// The templates are validated as any stream's would be: the engine sets their Stream.
	pc := c.producerConfig(stream.Default())
	if err := pc.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("engine: Producer: %w", err))
	}
	cc := c.consumerConfig(stream.Default(), nil)
	if c.Store != nil {
		if err := cc.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("engine: Consumer: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (c *Config) producerConfig(st stream.Stream) producer.Config {
	pc := c.Producer
	pc.ObjectStore = c.Store
	if c.Store != nil {
		var s objectstore.Store = c.Store
		if c.Watch != nil {
			s = watch.PublishingStore(s, c.Watch)
		}
		pc.ObjectStore = objectstore.WithDefaultPurpose(s, objectstore.PurposeCommit)
	}
	pc.Stream = st
	pc.CreateStream = false
	pc.Logger = c.streamLogger(st, pc.Logger)
	pc.Registerer = nil
	if c.Registerer != nil {
		pc.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"basin": st.Basin(), "stream": st.Name()}, c.Registerer)
	}
	pc.Now = c.Now
	return pc
}

func (c *Config) consumerConfig(st stream.Stream, hub *watch.Hub) consumer.Config {
	cc := c.Consumer
	cc.ObjectStore = c.Store
	cc.Stream = st
	cc.Notifier = nil
	cc.Watch = hub
	cc.Logger = c.streamLogger(st, cc.Logger)
	cc.Registerer = c.Registerer // readers share their collectors (consumer.NewReader)
	return cc
}

// streamLogger is the engine's logger with the stream named, or def without one.
func (c *Config) streamLogger(st stream.Stream, def *slog.Logger) *slog.Logger {
	if c.Logger == nil {
		return def
	}
	return c.Logger.With(slog.String("basin", st.Basin()), slog.String("stream", st.Name()))
}

// Sentinel errors.
var (
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("engine: closed")
	// ErrBasinNotFound: the basin has no marker object.
	ErrBasinNotFound = errors.New("engine: basin not found")
	// ErrBasinExists: CreateBasin found the basin.
	ErrBasinExists = errors.New("engine: basin already exists")
)

// Engine serves many streams of one store. Its methods are safe for concurrent use.
type Engine struct {
	cfg Config

	mu        sync.Mutex
	producers map[streamKey]*openProducer
	readers   map[streamKey]*consumer.Reader
	closed    bool

	watch  *watch.Hub // the followers' shared manifest watchers, woken by this engine's appends
	ownHub bool       // watch is the engine's own: Close closes it

	quit    chan struct{}
	janitor sync.WaitGroup // the idle-closing loop
	closers sync.WaitGroup // producers being closed in the background

	metrics *metrics
	lag     *lagMetrics // nil without a Registerer
}

type streamKey struct{ basin, name string }

// New starts an engine. Close it to drain its producers.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ownHub := cfg.Watch == nil
	if ownHub {
		wcfg := watch.DefaultConfig()
		wcfg.Logger, wcfg.Registerer = cfg.Logger, cfg.Registerer
		hub, err := watch.New(wcfg)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		cfg.Watch = hub
	}
	e := &Engine{
		cfg:       cfg,
		producers: make(map[streamKey]*openProducer),
		readers:   make(map[streamKey]*consumer.Reader),
		watch:     cfg.Watch,
		ownHub:    ownHub,
		quit:      make(chan struct{}),
		metrics:   newMetrics(cfg.Registerer),
	}
	e.janitor.Add(1)
	go e.closeIdle()
	if cfg.Registerer != nil && cfg.LagInterval > 0 {
		e.lag = newLagMetrics(cfg.Registerer)
		e.janitor.Add(1)
		go e.lagLoop()
	}
	return e, nil
}

// Store is the engine's store.
func (e *Engine) Store() objectstore.Store { return e.cfg.Store }

// Close stops the engine: it drains and closes every producer (appends already accepted are
// committed or fail), and waits for its goroutines.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	ps := e.producers
	e.producers = nil
	e.mu.Unlock()
	close(e.quit)
	e.janitor.Wait()
	if e.ownHub {
		defer e.watch.Close() // after the producers: followers see their last commits
	}
	defer e.closers.Wait()
	var errs []error
	for _, op := range ps {
		if err := e.stopProducer(ctx, op); err != nil {
			errs = append(errs, fmt.Errorf("engine: closing producer of %q: %w", op.st.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Locate validates the names and returns where the stream lives.
func (e *Engine) Locate(basin, name string) (stream.Stream, error) {
	return stream.Locate(basin, name)
}
