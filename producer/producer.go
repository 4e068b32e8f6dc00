package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Producer appends to one stream. It is safe for concurrent use. See the package doc for the
// life of an append.
type Producer struct {
	cfg    Config
	store  objectstore.Store
	log    *slog.Logger
	m      *metrics
	id     string
	gen    [16]byte
	tsMode atomic.Uint32 // manifest.TimestampingMode, as last read
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   kicks

	mu       sync.Mutex
	closing  bool
	fatal    error
	open     *batch
	nextNum  uint64
	pending  []*batch // sealed and not yet resolved, in batch order
	toUpload []*batch // sealed, waiting for an uploader
	room     room
	progress chan struct{} // closed and replaced when a batch resolves
	expiries uint64        // how often DeliveryTimeout failed batches (Submit's records check it)
	// commitErr is the last manifest read or write error, nil after a success: the cause a
	// delivery timeout names.
	commitErr error
	// freeEnc keeps encoders of committed batches for reuse, freeBytes of buffers in all
	// (see recycleLocked): a fresh buffer of a batch's size costs more than a warm one.
	freeEnc   []*batchfmt.Encoder
	freeBytes int64
	// batchSize is the recent peak of sealed batches' encoded sizes, what a new batch is
	// sized for: the largest since, less an eighth per batch sealed after it.
	batchSize int

	c   commitState // the commit goroutine's own state
	sub submitter
}

// kicks wake the producer's goroutines; each holds at most the kicks it can act on.
type kicks struct {
	upload chan struct{} // a batch was sealed
	commit chan struct{} // a batch was uploaded
	linger chan struct{} // a batch was opened
	expiry chan struct{} // a deadline was set, or a write released its batches
}

func (k kicks) wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// New opens the stream at cfg.Stream.ManifestKey() (creating it if cfg.CreateStream) and starts the
// producer's goroutines. Close it to drain and stop them.
func New(ctx context.Context, cfg Config) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ProducerID == "" {
		cfg.ProducerID = randomID(8)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	snap, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer, cfg.ProducerID)
	if err != nil {
		m.unregister(cfg.Registerer)
		return nil, fmt.Errorf("producer: register metrics: %w", err)
	}
	ccfg := cfg.Committer
	if ccfg.Now == nil {
		ccfg.Now = cfg.Now
	}
	cc, err := commitclient.New(ccfg)
	if err != nil {
		m.unregister(cfg.Registerer)
		return nil, err // Validate checked it
	}
	cc.Observe(snap.State.Committer)
	pctx, cancel := context.WithCancel(context.Background())
	p := &Producer{
		cfg: cfg, store: cfg.ObjectStore, log: cfg.Logger.With("producer_id", cfg.ProducerID), m: m,
		id: cfg.ProducerID, gen: snap.State.Generation, ctx: pctx, cancel: cancel,
		kick: kicks{upload: make(chan struct{}, cfg.UploadConcurrency), commit: make(chan struct{}, 1),
			linger: make(chan struct{}, 1), expiry: make(chan struct{}, 1)},
		nextNum: 1, room: newRoom(), progress: make(chan struct{}),
		c: commitState{snap: snap, index: manifest.NewIndex(cfg.ObjectStore, snap.State), client: cc, pace: manifest.NewPacer(cfg.ObjectStore, nil)},
	}
	if ps, ok := snap.State.Producer(p.id); ok {
		// The id was used before (a restart with a fixed id): continue its batch numbers.
		p.nextNum = ps.LastBatch + 1
	}
	p.tsMode.Store(uint32(snap.State.Config.Timestamping.Mode))
	if err := p.sub.init(p, cfg.Batching); err != nil {
		cancel()
		m.unregister(cfg.Registerer)
		return nil, err
	}
	p.wg.Add(cfg.UploadConcurrency + 3)
	for range cfg.UploadConcurrency {
		go p.uploadLoop()
	}
	go p.commitLoop()
	go p.lingerLoop()
	go p.sub.loop()
	if cfg.DeliveryTimeout > 0 {
		p.wg.Add(1)
		go p.expiryLoop()
	}
	p.log.Debug("producer started", "manifest", cfg.Stream.ManifestKey(), "generation", snap.State.GenerationString(), "first_batch", p.nextNum)
	return p, nil
}

// open reads (or creates) the stream's manifest, within DeliveryTimeout if one is set: a
// store that does not answer must not hold the first step of every append for longer.
func open(ctx context.Context, cfg Config) (*manifest.Snapshot, error) {
	octx := ctx
	if cfg.DeliveryTimeout > 0 {
		var cancel context.CancelFunc
		octx, cancel = context.WithTimeout(ctx, cfg.DeliveryTimeout)
		defer cancel()
	}
	var snap *manifest.Snapshot
	var err error
	if cfg.CreateStream {
		snap, err = manifest.Open(cfg.ObjectStore, cfg.Stream.ManifestKey()).LoadOrCreate(octx, cfg.StreamConfig, cfg.Now())
	} else {
		snap, err = manifest.Open(cfg.ObjectStore, cfg.Stream.ManifestKey(), manifest.WithBackoff(cfg.Backoff)).LoadWithRetry(octx)
	}
	if err == nil {
		snap, err = foldJournal(octx, cfg.ObjectStore, cfg.Stream.ManifestKey(), snap, cfg.Backoff)
	}
	if err != nil && octx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("producer: open stream: %w: not opened within %v: %w", ErrDeliveryTimeout, cfg.DeliveryTimeout, causeOf(err))
	}
	if err != nil {
		return nil, fmt.Errorf("producer: open stream: %w", err)
	}
	return snap, nil
}

// foldJournal is snap with the commits of the journal its manifest names folded into its
// state (manifest.FoldJournal), so that the producer table shows every batch committed
// through a journal committer. Version stays the manifest's: a direct write first seals the
// journal anyway (commitGroup).
// Plain read failures are retried with backoff (up to 20 attempts, within ctx); corruption
// and the store's refusals are not.
func foldJournal(ctx context.Context, store objectstore.Store, key string, snap *manifest.Snapshot, backoff manifest.Backoff) (*manifest.Snapshot, error) {
	if snap.State.Journal == nil {
		return snap, nil
	}
	st := snap.State.Clone()
	for attempt := 0; ; attempt++ {
		// On a failure st holds the windows folded so far: the next attempt goes on from there.
		_, _, err := manifest.FoldJournal(ctx, store, key, st)
		if err == nil {
			return &manifest.Snapshot{State: st, Version: snap.Version}, nil
		}
		if errors.Is(err, manifest.ErrCorrupt) || errors.Is(err, journal.ErrCorrupt) || errors.Is(err, journal.ErrUnsupportedVersion) ||
			objectstore.Refused(err) || attempt >= 19 || backoff.Sleep(ctx, attempt) != nil {
			return nil, err
		}
	}
}

// ID returns the producer id.
func (p *Producer) ID() string { return p.id }

// Err returns the error the producer failed with (it then refuses every append with it), or
// nil while it works. An owner that keeps producers open should replace a failed one.
func (p *Producer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal
}

// Flush flushes the open batch (and Submit's pending records) and waits until every append
// accepted before the call has resolved, or ctx ends. The outcomes are on the tickets: Flush
// returns an error only when ctx ends, the producer failed (see Err) or is closed.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	closing := p.closing
	p.mu.Unlock()
	if closing {
		return ErrClosed
	}
	if err := p.sub.flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	p.sealLocked()
	target := p.nextNum - 1
	p.mu.Unlock()
	return p.waitResolved(ctx, target)
}

// waitResolved waits until every batch up to target (all sealed) has resolved, or the
// producer failed, stopped, or ctx ended.
func (p *Producer) waitResolved(ctx context.Context, target uint64) error {
	for {
		p.mu.Lock()
		// pending is in batch order; batches need not resolve in order (DeliveryTimeout can
		// fail later ones while a write holds an earlier one).
		done := len(p.pending) == 0 || p.pending[0].num > target
		fatal, ch := p.fatal, p.progress
		p.mu.Unlock()
		if done || fatal != nil {
			return fatal
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("producer: flush: %w", ctx.Err())
		case <-p.ctx.Done():
			return ErrClosed
		}
	}
}

// Close drains the producer: it refuses new appends (ErrClosed), flushes, waits until every
// accepted append has resolved, then stops the producer's goroutines and waits for them. If
// ctx ends first, Close aborts: what is in progress is cancelled, unresolved tickets fail
// with ErrAborted (ErrOutcomeUnknown where a write holding them was sent), and
// Close returns ctx's error once the goroutines have stopped. The store is not closed. A
// later Close waits for the goroutines and returns nil.
func (p *Producer) Close(ctx context.Context) error {
	// Stop Submit, then Append, so that no record is left in the client-side batch. The
	// holder of the submitter's lock may wait for buffer space a stuck store never frees: if
	// ctx ends first, cancelling the producer's context ends that wait.
	locked := make(chan struct{})
	go func() {
		p.sub.mu.Lock() // unlocked below
		close(locked)
	}()
	aborted := false
	select {
	case <-locked:
	case <-ctx.Done():
		aborted = true
		p.cancel()
		<-locked
	}
	p.mu.Lock()
	already := p.closing
	p.closing = true
	p.mu.Unlock()
	if already {
		p.sub.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	if in, ok := p.sub.b.Flush(); ok {
		p.sub.emitLocked(ctx, in, true)
	}
	p.sub.mu.Unlock()
	p.mu.Lock()
	p.sealLocked()
	target := p.nextNum - 1
	fatal := p.fatal
	p.mu.Unlock()
	var err error
	switch {
	case fatal != nil:
		err = fatal
	case aborted:
		err = fmt.Errorf("producer: close: %w", ctx.Err())
	default:
		err = p.waitResolved(ctx, target)
	}
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	for len(p.pending) > 0 {
		b := p.pending[0]
		e := ErrAborted
		if b.sent {
			e = ErrOutcomeUnknown
		}
		p.resolveLocked(b, nil, Position{}, e)
	}
	p.pending, p.toUpload, p.freeEnc, p.freeBytes = nil, nil, nil, 0
	p.mu.Unlock()
	p.sub.abort(ErrAborted)
	p.m.unregister(p.cfg.Registerer)
	return err
}

// sealLocked flushes the open batch: it joins pending and waits for an uploader.
func (p *Producer) sealLocked() {
	b := p.open
	if b == nil {
		return
	}
	p.open = nil
	b.to(stateSealed)
	p.batchSize = max(b.enc.EncodedSize(), p.batchSize-p.batchSize/8)
	b.arrivalMs = uint64(max(p.cfg.Now().UnixMilli(), 0))
	p.pending = append(p.pending, b)
	p.toUpload = append(p.toUpload, b)
	p.kick.wake(p.kick.upload)
	if p.cfg.DeliveryTimeout > 0 {
		b.deadline = time.Now().Add(p.cfg.DeliveryTimeout - b.preWait)
		p.kick.wake(p.kick.expiry)
	}
}

// logRetry logs a "failed, retrying" line with the error's class: at Error when the store
// refuses (objectstore.Refused), which only an operator can cure, else at Warn.
func (p *Producer) logRetry(msg string, err error, args ...any) {
	level := slog.LevelWarn
	if objectstore.Refused(err) {
		level = slog.LevelError
	}
	p.log.Log(p.ctx, level, msg, append(args, "class", objectstore.ErrorClass(err), "err", err)...)
}
