// Package engine runs many streams of one object store for the daemon: it creates, lists,
// reconfigures and deletes streams and basins (laid out by package catalog), keeps one shared
// producer per stream that is being appended to, and answers tail and read requests.
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
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
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
	// Producer is the template for the per-stream producers; its ObjectStore, ManifestPath,
	// DataPathPrefix, CreateStream, Logger and Registerer are set by the engine.
	Producer producer.Config
	// Consumer is the template for the per-stream readers; its ObjectStore, ManifestPath,
	// DataPathPrefix, Notifier, Logger and Registerer are set by the engine.
	Consumer consumer.Config
	// IdleTimeout closes a stream's producer after this long without appends. Must be > 0.
	IdleTimeout time.Duration
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the engine's metrics, and those of its producers and readers:
	// each open producer's, labelled with its basin and stream (and its producer id) and
	// removed when it closes; the readers' summed over every stream. Default nil.
	Registerer prometheus.Registerer
	// Now is the engine's clock. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns the defaults: producers with the seeds' defaults but a 10 ms
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
	if c.Logger == nil {
		errs = append(errs, errors.New("engine: Logger is nil"))
	}
	if c.Now == nil {
		errs = append(errs, errors.New("engine: Now is nil"))
	}
	pc := c.producerConfig(catalog.Stream{ManifestPath: "x/manifest", DataPrefix: "x/data"})
	if err := pc.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("engine: Producer: %w", err))
	}
	cc := c.consumerConfig(catalog.Stream{ManifestPath: "x/manifest", DataPrefix: "x/data"}, nil)
	if c.Store != nil {
		if err := cc.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("engine: Consumer: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (c *Config) producerConfig(st catalog.Stream) producer.Config {
	pc := c.Producer
	pc.ObjectStore = c.Store
	pc.ManifestPath = st.ManifestPath
	pc.DataPathPrefix = st.DataPrefix
	pc.CreateStream = false
	pc.Logger = c.streamLogger(st, pc.Logger)
	pc.Registerer = nil
	if c.Registerer != nil {
		pc.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"basin": st.Basin, "stream": st.Name}, c.Registerer)
	}
	pc.Now = c.Now
	return pc
}

func (c *Config) consumerConfig(st catalog.Stream, n *consumer.Notifier) consumer.Config {
	cc := c.Consumer
	cc.ObjectStore = c.Store
	cc.ManifestPath = st.ManifestPath
	cc.DataPathPrefix = st.DataPrefix
	cc.Notifier = n
	cc.Logger = c.streamLogger(st, cc.Logger)
	cc.Registerer = c.Registerer // readers share their collectors (consumer.NewReader)
	return cc
}

// streamLogger is the engine's logger with the stream named, or def without one.
func (c *Config) streamLogger(st catalog.Stream, def *slog.Logger) *slog.Logger {
	if c.Logger == nil {
		return def
	}
	return c.Logger.With(slog.String("basin", st.Basin), slog.String("stream", st.Name))
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

	notifier *consumer.Notifier // wakes followers when an append of this engine commits

	quit    chan struct{}
	janitor sync.WaitGroup // the idle-closing loop
	closers sync.WaitGroup // producers being closed in the background

	metrics *metrics
}

type streamKey struct{ basin, name string }

type openProducer struct {
	p        *producer.Producer
	st       catalog.Stream
	lastUsed time.Time
	inFlight int
}

// New starts an engine. Close it to drain its producers.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:       cfg,
		producers: make(map[streamKey]*openProducer),
		readers:   make(map[streamKey]*consumer.Reader),
		notifier:  consumer.NewNotifier(),
		quit:      make(chan struct{}),
		metrics:   newMetrics(cfg.Registerer),
	}
	e.janitor.Add(1)
	go e.closeIdle()
	return e, nil
}

// Store is the engine's store.
func (e *Engine) Store() objectstore.Store { return e.cfg.Store }

// closeIdle closes producers idle for longer than IdleTimeout, until Close.
func (e *Engine) closeIdle() {
	defer e.janitor.Done()
	t := time.NewTicker(max(e.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-e.quit:
			return
		case <-t.C:
		}
		now := e.cfg.Now()
		var idle []*openProducer
		e.mu.Lock()
		for k, op := range e.producers {
			if op.inFlight == 0 && now.Sub(op.lastUsed) >= e.cfg.IdleTimeout {
				idle = append(idle, op)
				delete(e.producers, k)
			}
		}
		e.mu.Unlock()
		for _, op := range idle {
			e.closeProducer(op)
		}
	}
}

// closeAsyncLocked closes op in the background; Close waits for it. The caller holds e.mu
// and the engine is not closed: Close sets closed under e.mu before it waits, so it counts
// every close started before that.
func (e *Engine) closeAsyncLocked(op *openProducer) {
	e.closers.Add(1)
	go func() {
		defer e.closers.Done()
		e.closeProducer(op)
	}()
}

// closeProducer closes op in the background path: with its own timeout, logging a failure.
func (e *Engine) closeProducer(op *openProducer) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.stopProducer(ctx, op); err != nil {
		e.cfg.Logger.Warn("closing producer", slog.String("stream", op.st.Name), slog.Any("err", err))
	}
}

// stopProducer closes op's producer (draining it within ctx) and counts it as closed.
func (e *Engine) stopProducer(ctx context.Context, op *openProducer) error {
	err := op.p.Close(ctx)
	e.metrics.openProducers.Dec()
	return err
}

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
	defer e.closers.Wait()
	var errs []error
	for _, op := range ps {
		if err := e.stopProducer(ctx, op); err != nil {
			errs = append(errs, fmt.Errorf("engine: closing producer of %q: %w", op.st.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Locate validates the names and returns where the stream lives.
func (e *Engine) Locate(basin, name string) (catalog.Stream, error) {
	return catalog.Locate(basin, name)
}

// BasinInfo is what a basin's marker object holds.
type BasinInfo struct {
	Name      string          `json:"name"`
	CreatedAt time.Time       `json:"created_at"`
	Config    json.RawMessage `json:"config,omitempty"` // the API layer's basin config, opaque here
}

// CreateBasin writes the basin's marker, create-only.
func (e *Engine) CreateBasin(ctx context.Context, name string, config json.RawMessage) (BasinInfo, error) {
	if err := catalog.ValidateBasinName(name); err != nil {
		return BasinInfo{}, err
	}
	info := BasinInfo{Name: name, CreatedAt: e.cfg.Now().UTC().Truncate(time.Millisecond), Config: config}
	data, err := json.Marshal(info)
	if err != nil {
		return BasinInfo{}, err
	}
	_, err = objectstore.PutBytes(ctx, e.cfg.Store, catalog.BasinMarker(name), data, objectstore.IfAbsent())
	switch {
	case errors.Is(err, objectstore.ErrPreconditionFailed):
		return BasinInfo{}, fmt.Errorf("%w: %q", ErrBasinExists, name)
	case errors.Is(err, objectstore.ErrOutcomeUnknown):
		// Read it back: if the marker holds what we wrote, the create took effect.
		got, gerr := e.Basin(ctx, name)
		if gerr == nil && got.CreatedAt.Equal(info.CreatedAt) && string(got.Config) == string(info.Config) {
			return got, nil
		}
		return BasinInfo{}, err
	case err != nil:
		return BasinInfo{}, err
	}
	return info, nil
}

// Basin reads a basin's marker.
func (e *Engine) Basin(ctx context.Context, name string) (BasinInfo, error) {
	if err := catalog.ValidateBasinName(name); err != nil {
		return BasinInfo{}, err
	}
	info, _, err := e.readBasin(ctx, name)
	return info, err
}

// readBasin reads and decodes a basin's marker, with the version it was read at.
func (e *Engine) readBasin(ctx context.Context, name string) (BasinInfo, string, error) {
	key := catalog.BasinMarker(name)
	data, oi, err := objectstore.ReadAll(ctx, e.cfg.Store, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return BasinInfo{}, "", fmt.Errorf("%w: %q", ErrBasinNotFound, name)
	}
	if err != nil {
		return BasinInfo{}, "", err
	}
	var info BasinInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return BasinInfo{}, "", fmt.Errorf("engine: basin marker %q is corrupt: %w", key, err)
	}
	return info, oi.Version, nil
}

// SetBasinConfig replaces a basin's config, conditionally on the marker's version.
func (e *Engine) SetBasinConfig(ctx context.Context, name string, update func(old json.RawMessage) (json.RawMessage, error)) (BasinInfo, error) {
	key := catalog.BasinMarker(name)
	b := manifest.DefaultBackoff()
	for attempt := 0; ; attempt++ {
		info, version, err := e.readBasin(ctx, name)
		if err != nil {
			return BasinInfo{}, err
		}
		if info.Config, err = update(info.Config); err != nil {
			return BasinInfo{}, err
		}
		out, err := json.Marshal(info)
		if err != nil {
			return BasinInfo{}, err
		}
		_, err = objectstore.PutBytes(ctx, e.cfg.Store, key, out, objectstore.IfMatch(version))
		if err == nil {
			return info, nil
		}
		if !errors.Is(err, objectstore.ErrPreconditionFailed) && !errors.Is(err, objectstore.ErrOutcomeUnknown) {
			return BasinInfo{}, err
		}
		// Lost a race, or don't know: re-read and apply again (the update is idempotent: it
		// sets the config it is given).
		if err := b.Sleep(ctx, attempt); err != nil {
			return BasinInfo{}, err
		}
	}
}

// ListBasins lists basins by name.
func (e *Engine) ListBasins(ctx context.Context, prefix, startAfter string, limit int) ([]BasinInfo, bool, error) {
	names, more, err := catalog.ListBasins(ctx, e.cfg.Store, prefix, startAfter, limit)
	if err != nil {
		return nil, false, err
	}
	out := make([]BasinInfo, 0, len(names))
	for _, n := range names {
		info, err := e.Basin(ctx, n)
		if errors.Is(err, ErrBasinNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, info)
	}
	return out, more, nil
}

// DeleteBasin deletes every stream of the basin and then its marker.
func (e *Engine) DeleteBasin(ctx context.Context, name string) error {
	if _, err := e.Basin(ctx, name); err != nil {
		return err
	}
	for {
		streams, more, err := catalog.ListStreams(ctx, e.cfg.Store, name, "", "", 100)
		if err != nil {
			return err
		}
		for _, st := range streams {
			if _, err := e.DeleteStream(ctx, name, st.Name); err != nil && !errors.Is(err, manifest.ErrNotExist) {
				return err
			}
		}
		if !more {
			break
		}
	}
	return e.cfg.Store.Delete(ctx, catalog.BasinMarker(name))
}

// requireBasin checks that a basin exists (no-op for the root namespace).
func (e *Engine) requireBasin(ctx context.Context, basin string) error {
	if basin == "" {
		return nil
	}
	_, err := e.Basin(ctx, basin)
	return err
}

// CreateStream creates a stream with cfg. manifest.ErrExists if it exists.
func (e *Engine) CreateStream(ctx context.Context, basin, name string, cfg manifest.Config) (*manifest.Snapshot, error) {
	st, err := catalog.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	if err := e.requireBasin(ctx, basin); err != nil {
		return nil, err
	}
	return manifest.Create(ctx, e.cfg.Store, st.ManifestPath, cfg, e.cfg.Now())
}

// Stream loads a stream's manifest. manifest.ErrNotExist if there is none; ErrBasinNotFound
// when the basin itself is missing.
func (e *Engine) Stream(ctx context.Context, basin, name string) (*manifest.Snapshot, error) {
	st, err := catalog.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	snap, err := manifest.Load(ctx, e.cfg.Store, st.ManifestPath)
	if errors.Is(err, manifest.ErrNotExist) {
		if berr := e.requireBasin(ctx, basin); berr != nil {
			return nil, berr
		}
	}
	return snap, err
}

// Reconfigure changes a stream's config with fn.
func (e *Engine) Reconfigure(ctx context.Context, basin, name string, fn func(*manifest.Config) error) (*manifest.Snapshot, error) {
	st, err := catalog.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	snap, err := manifest.Update(ctx, e.cfg.Store, st.ManifestPath, func(s *manifest.State) error {
		c := s.Config
		if err := fn(&c); err != nil {
			return err
		}
		if err := c.Validate(); err != nil {
			return err
		}
		if c == s.Config {
			return manifest.ErrNoChange
		}
		s.Config = c
		return nil
	})
	if errors.Is(err, manifest.ErrNotExist) {
		if berr := e.requireBasin(ctx, basin); berr != nil {
			return nil, berr
		}
	}
	return snap, err
}

// ListStreams lists a basin's streams ("" = the root namespace).
func (e *Engine) ListStreams(ctx context.Context, basin, prefix, startAfter string, limit int) ([]catalog.Stream, bool, error) {
	if err := e.requireBasin(ctx, basin); err != nil {
		return nil, false, err
	}
	return catalog.ListStreams(ctx, e.cfg.Store, basin, prefix, startAfter, limit)
}

// DeleteStream deletes a stream: its manifest first (so readers and producers see it gone at
// once), then its batch and segment objects: those it references and those written before
// its manifest's last write, none of a stream created again under the name meanwhile. It
// returns how many objects it deleted, the manifest included. A producer of this engine for
// the stream is closed; producers elsewhere fail their next commit with
// manifest.ErrNotExist, and what they upload afterwards is unreferenced, left to the
// collector (package gc).
func (e *Engine) DeleteStream(ctx context.Context, basin, name string) (deleted int, err error) {
	st, err := catalog.Locate(basin, name)
	if err != nil {
		return 0, err
	}
	snap, err := e.Stream(ctx, basin, name)
	if err != nil {
		return 0, err
	}
	// Only objects of this stream go: those its manifest references (their keys are unique)
	// and those written before its manifest's last write. Objects written later may belong
	// to a stream created again under the name while this runs: they are left alone
	// (unreferenced ones go to the collector).
	head, err := e.cfg.Store.Head(ctx, st.ManifestPath)
	if err != nil {
		if errors.Is(err, objectstore.ErrNotFound) { // deleted meanwhile
			return 0, fmt.Errorf("%w: %s: %w", manifest.ErrNotExist, st.ManifestPath, err)
		}
		return 0, err
	}
	refs := map[string]bool{}
	for _, r := range snap.State.Segments {
		refs[r.Key] = true
	}
	// A segment that cannot be read only leaves its objects to the ModTime rule.
	_ = manifest.NewIndex(e.cfg.Store, snap.State).Walk(ctx, 0, func(en *manifest.Entry) error {
		refs[en.Key] = true
		return nil
	})
	// The stream's producer is closed whatever happens next (the next append opens a new
	// one): it drains in the background, and what it commits after the manifest is gone fails.
	key := streamKey{basin, name}
	e.mu.Lock()
	if op := e.producers[key]; op != nil {
		delete(e.producers, key)
		e.closeAsyncLocked(op)
	}
	delete(e.readers, key)
	e.mu.Unlock()
	if err := e.cfg.Store.Delete(ctx, st.ManifestPath); err != nil {
		return 0, err
	}
	deleted = 1
	for _, prefix := range []string{st.DataPrefix + "/", manifest.SegmentPrefix(st.ManifestPath)} {
		err := objectstore.ListAll(ctx, e.cfg.Store, prefix, func(o objectstore.ObjectInfo) error {
			if !refs[o.Key] && (o.ModTime.IsZero() || !o.ModTime.Before(head.ModTime)) {
				return nil
			}
			if err := e.cfg.Store.Delete(ctx, o.Key); err != nil {
				return err
			}
			deleted++
			return nil
		})
		if err != nil {
			return deleted, fmt.Errorf("engine: stream %q deleted, but removing its objects failed (the collector will retry): %w", name, err)
		}
	}
	return deleted, nil
}

// Tail returns a stream's tail.
func (e *Engine) Tail(ctx context.Context, basin, name string) (manifest.Position, error) {
	snap, err := e.Stream(ctx, basin, name)
	if err != nil {
		return manifest.Position{}, err
	}
	return snap.State.Tail, nil
}

// Append appends in to a stream through the stream's shared producer and waits for its ack.
func (e *Engine) Append(ctx context.Context, basin, name string, in batchfmt.AppendInput) (producer.Ack, error) {
	arrived := time.Now()
	for attempt := 0; ; attempt++ {
		op, err := e.acquireFor(ctx, basin, name, arrived)
		if err != nil {
			return producer.Ack{}, err
		}
		var ack producer.Ack
		t, err := op.p.Append(ctx, in, producer.ReceivedAt(arrived))
		if err == nil {
			ack, err = t.Wait(ctx)
		}
		e.release(op)
		if err != nil && attempt == 0 && (errors.Is(err, manifest.ErrGenerationChanged) || errors.Is(err, producer.ErrClosed)) {
			// The stream was deleted and created again under this producer, or the producer
			// was closed for idleness meanwhile: open a fresh one and try once more.
			e.evict(basin, name, op)
			continue
		}
		if errors.Is(err, manifest.ErrNotExist) || op.p.Err() != nil {
			e.evict(basin, name, op) // gone, or failed for good: the next append opens afresh
		}
		if err == nil {
			e.notifier.Notify(op.st.ManifestPath)
		}
		return ack, err
	}
}

// AppendAsync hands in to the stream's shared producer without waiting for its commit, and
// returns a function that waits for its ack (call it exactly once; a wait whose ctx ends
// first returns ctx's error, and the append still commits or fails on its own). Inputs that
// one goroutine hands over one after another with one chain commit in that order, each only
// if none before it failed (producer.Chain): an append session can have many in flight, the
// producer batches them into few commits, and nothing after a failure enters the stream. The
// error returned at once is one of handing over: no such stream, an invalid input, a closed
// engine, an earlier failure of the chain, the delivery timeout (producer.ErrDeliveryTimeout)
// when opening the stream's producer, or waiting to be handed to it, took too long
// (producer.ReceivedAt). An error from the wait is final for this input:
// unlike Append, it is not retried on a fresh producer, which could reorder it after inputs
// handed over since. Order holds across producers too: if the stream's producer is replaced
// while earlier inputs are still pending on it (the stream deleted and created again), the
// chain's next input waits for them on the new producer (producer.WithChain) and fails
// if one of them does.
func (e *Engine) AppendAsync(ctx context.Context, basin, name string, in batchfmt.AppendInput, chain *producer.Chain) (wait func(context.Context) (producer.Ack, error), err error) {
	arrived := time.Now()
	for attempt := 0; ; attempt++ {
		op, err := e.acquireFor(ctx, basin, name, arrived)
		if err != nil {
			return nil, err
		}
		t, err := op.p.Append(ctx, in, producer.WithChain(chain), producer.ReceivedAt(arrived))
		if err != nil {
			e.release(op)
			if attempt == 0 && (errors.Is(err, manifest.ErrGenerationChanged) || errors.Is(err, producer.ErrClosed)) {
				// Once more on a fresh producer, which first waits for the chain's appends
				// still pending on this one (and refuses this one if any of them fails).
				e.evict(basin, name, op)
				continue
			}
			if errors.Is(err, manifest.ErrNotExist) || op.p.Err() != nil {
				e.evict(basin, name, op)
			}
			return nil, err
		}
		return func(wctx context.Context) (producer.Ack, error) {
			ack, err := t.Wait(wctx)
			select {
			case <-t.Done():
				e.settle(basin, name, op, err)
			default:
				// wctx ended first: the producer is in use until the ticket resolves.
				go func() {
					<-t.Done()
					_, terr := t.Result()
					e.settle(basin, name, op, terr)
				}()
			}
			return ack, err
		}, nil
	}
}

// acquireFor is acquire for an append that arrived at arrived: with a delivery timeout,
// opening the stream's producer must end within it, counted from the append's arrival (an
// append retried on a fresh producer keeps its first arrival), or the append fails with
// producer.ErrDeliveryTimeout, nothing of it written. The producer's own open is bounded by
// the timeout from its start as well. The time the append then waits to be accepted also
// counts (producer.ReceivedAt): a client that gives up on an append some time
// after sending it must have been told of its failure by then.
func (e *Engine) acquireFor(ctx context.Context, basin, name string, arrived time.Time) (*openProducer, error) {
	d := e.cfg.Producer.DeliveryTimeout
	if d <= 0 {
		return e.acquire(ctx, basin, name)
	}
	actx, cancel := context.WithDeadline(ctx, arrived.Add(d))
	defer cancel()
	op, err := e.acquire(actx, basin, name)
	if err != nil && ctx.Err() == nil && actx.Err() != nil && !errors.Is(err, producer.ErrDeliveryTimeout) {
		err = fmt.Errorf("%w: the stream's producer did not open within %v of the append's arrival: %w", producer.ErrDeliveryTimeout, d, err)
	}
	return op, err
}

// settle ends an AppendAsync's use of op once its ticket has resolved with err.
func (e *Engine) settle(basin, name string, op *openProducer, err error) {
	e.release(op)
	switch {
	case err == nil:
		e.notifier.Notify(op.st.ManifestPath)
	case errors.Is(err, manifest.ErrGenerationChanged), errors.Is(err, producer.ErrClosed), errors.Is(err, manifest.ErrNotExist), op.p.Err() != nil:
		e.evict(basin, name, op) // the next append opens a fresh producer
	}
}

// acquire returns the stream's producer, opening it if needed, and marks it in use.
func (e *Engine) acquire(ctx context.Context, basin, name string) (*openProducer, error) {
	key := streamKey{basin, name}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if op, ok := e.producers[key]; ok {
		op.inFlight++
		op.lastUsed = e.cfg.Now()
		e.mu.Unlock()
		return op, nil
	}
	e.mu.Unlock()

	st, err := catalog.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	p, err := producer.New(ctx, e.cfg.producerConfig(st))
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			if berr := e.requireBasin(ctx, basin); berr != nil {
				return nil, berr
			}
		}
		return nil, err
	}
	e.metrics.openProducers.Inc() // every producer opened is closed through stopProducer
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.closeProducer(&openProducer{p: p, st: st}) // now: Close may be waiting already
		return nil, ErrClosed
	}
	defer e.mu.Unlock()
	if op, ok := e.producers[key]; ok { // another request won the race
		e.closeAsyncLocked(&openProducer{p: p, st: st})
		op.inFlight++
		op.lastUsed = e.cfg.Now()
		return op, nil
	}
	op := &openProducer{p: p, st: st, lastUsed: e.cfg.Now(), inFlight: 1}
	e.producers[key] = op
	return op, nil
}

func (e *Engine) release(op *openProducer) {
	e.mu.Lock()
	op.inFlight--
	op.lastUsed = e.cfg.Now()
	e.mu.Unlock()
}

// evict drops op from the cache (if it is still the cached one) and closes it.
func (e *Engine) evict(basin, name string, op *openProducer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur, ok := e.producers[streamKey{basin, name}]; ok && cur == op {
		delete(e.producers, streamKey{basin, name})
		e.closeAsyncLocked(op)
	}
}

type metrics struct {
	openProducers prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		openProducers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "sluice", Subsystem: "engine", Name: "open_producers",
			Help: "Streams with an open producer in this daemon.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.openProducers)
	}
	return m
}
