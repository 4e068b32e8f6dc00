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
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrClosed: the producer is closed (or closing) and accepts no more appends.
	ErrClosed = errors.New("producer: closed")
	// ErrAborted: the producer was closed before the append could be committed; it was
	// not committed.
	ErrAborted = errors.New("producer: aborted before commit")
	// ErrOutcomeUnknown: the producer stopped (Close gave up, or the manifest became
	// unreadable) after a manifest write holding the append had been attempted and before
	// it could tell whether that write took effect: the append may or may not be in the
	// stream.
	ErrOutcomeUnknown = errors.New("producer: aborted, commit outcome unknown")
	// ErrPositionsUnavailable: the append was committed, but its entry had already left the
	// manifest (trimmed or acknowledged by every group) by the time the producer, recovering
	// from a write with an unknown outcome, could read its positions back.
	ErrPositionsUnavailable = errors.New("producer: committed, but positions no longer available")
	// ErrProducerIDReused: the manifest holds an entry under this producer's id and batch
	// number that another process committed (a fixed ProducerID reused sooner than
	// CommitDeadline after the process that had it died). The append's outcome is unknown.
	ErrProducerIDReused = errors.New("producer: producer id reused: another process committed this batch number")
	// ErrDeliveryTimeout: the append's batch was not committed within
	// Config.DeliveryTimeout of its flush (less the time it waited to be accepted, for
	// AppendChainedSince, which also refuses with it an append not accepted in time), or an
	// earlier batch was not (appends accepted after a failed one fail with it). The append
	// is not in the stream. The error also wraps the store's refusal behind it, if that is
	// the cause (objectstore.Refused: ErrNoBucket, ErrAccessDenied,
	// ErrConditionsUnsupported); other causes are given as text only, so that it never also
	// matches ErrOutcomeUnknown or a conflict.
	ErrDeliveryTimeout = errors.New("producer: delivery timeout")
)

// causeOf is err as ErrDeliveryTimeout wraps it: a refusal of the store as it is (callers may
// match objectstore.ErrNoBucket, ErrAccessDenied or objectstore.Refused), anything else as
// text only, so that a delivery timeout never matches ErrOutcomeUnknown, a conflict or
// another class of its own.
func causeOf(err error) error {
	if objectstore.Refused(err) {
		return err
	}
	return errors.New(err.Error())
}

// errSubmittedBeforeExpiry fails Submit's records accepted before DeliveryTimeout failed
// batches.
var errSubmittedBeforeExpiry = fmt.Errorf("%w: submitted before earlier appends failed with it", ErrDeliveryTimeout)

// errExpired stops the upload of a batch whose appends failed with ErrDeliveryTimeout.
var errExpired = errors.New("producer: batch expired")

// Position is a record's place in the stream.
type Position = manifest.Position

// Ack is the acknowledgement of a committed append: Start is the first record's position,
// End the position after the last record (End.SeqNum exclusive; End.Timestamp is the last
// record's timestamp), Tail the stream's tail after the manifest write that committed it.
type Ack struct {
	Start, End, Tail Position
}

// Ticket resolves when its append is committed (the manifest write holding it succeeded) or
// has failed. Failures: *manifest.SeqNumMismatchError, *manifest.FencingTokenMismatchError,
// manifest.ErrTimestampRequired (the append's condition failed at commit time; nothing of it
// is in the stream), ErrDeliveryTimeout, ErrAborted, ErrOutcomeUnknown, ErrPositionsUnavailable, or a fatal
// stream error (manifest.ErrNotExist, manifest.ErrGenerationChanged, manifest.ErrCorrupt
// after repeated reads), joined with ErrOutcomeUnknown when a write had been attempted.
type Ticket struct {
	done    chan struct{}
	ack     Ack
	err     error
	records int
	metered int64
	start   time.Time
	chain   *Chain // AppendChained's, or nil
}

// Chain links appends that one goroutine hands to AppendChained one after another, as an
// append session's: each is applied only if none before it in the chain failed. Once one
// fails (its ticket resolves with an error: a condition, or any other error), every later
// one fails with manifest.ErrPrecedingAppendFailed and nothing of it enters the stream, so
// that a client which resends what a failed session left unacknowledged never writes a
// record twice — except after ErrOutcomeUnknown, when the manifest write that failed may
// have committed the appends it held. An append AppendChained refuses at once is not part of
// the chain: the appends before it still commit, and it is for the caller to hand over no
// more after it (as an append session ends at its first error). The zero value is ready to
// use.
//
// A chain may move from one producer to another, as a session's does when the stream's
// producer is replaced (the stream was deleted and created again, or another process took
// it over): AppendChained on the new producer first waits until the appends handed to the
// old one have resolved, so that none of them can fail after a later one has committed.
type Chain struct {
	failed atomic.Bool
	// The first failure's producer and batch number (guarded by that producer's mu): a
	// batch committed after a later batch failed (DeliveryTimeout fails later batches
	// while an earlier one's manifest write is retried) still applies the chain's appends.
	failP   *Producer
	failNum uint64
	last    *Ticket   // the last append handed over (the submitting goroutine's)
	lastP   *Producer // the producer it was handed to
}

// testHookChainMove, if set, is called when AppendChained waits for a chain's appends on
// another producer.
var testHookChainMove func()

// Failed reports whether an append of the chain has failed (false for a nil chain).
func (c *Chain) Failed() bool { return c != nil && c.failed.Load() }

// failedBeforeLocked reports whether an append of c failed in a batch of p before batch num,
// or on another producer; p.mu is held.
func (c *Chain) failedBeforeLocked(p *Producer, num uint64) bool {
	return c != nil && c.failed.Load() && (c.failP != p || c.failNum < num)
}

// Wait waits until the last append handed over has resolved (or ctx ends), so that a caller
// moving the chain to another producer (the stream's was closed) keeps its order.
func (c *Chain) Wait(ctx context.Context) error {
	if c == nil || c.last == nil {
		return nil
	}
	select {
	case <-c.last.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed when the ticket has resolved.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// Result returns the outcome; call it after Done is closed.
func (t *Ticket) Result() (Ack, error) {
	<-t.done
	return t.ack, t.err
}

// Wait waits for the outcome or for ctx (which does not affect the append).
func (t *Ticket) Wait(ctx context.Context) (Ack, error) {
	select {
	case <-t.done:
		return t.ack, t.err
	case <-ctx.Done():
		return Ack{}, ctx.Err()
	}
}

// batch is one batch object: the appends flushed together, from open to commit.
type batch struct {
	num       uint64
	enc       *batchfmt.Encoder
	appends   []*batchfmt.AppendInput
	tickets   []*Ticket
	chained   bool // some ticket has a Chain
	metered   int64
	opened    time.Time
	sealed    time.Time // when it was flushed: DeliveryTimeout runs from here
	arrivalMs uint64
	// preWait is the longest an append of it waited to be accepted (AppendChainedSince),
	// which DeliveryTimeout leaves it the less after its flush; deadline is when
	// DeliveryTimeout fails it, sealed + DeliveryTimeout - preWait (set when it is flushed).
	preWait  time.Duration
	deadline time.Time

	// Set by uploaders / the committer.
	data        []byte
	key         string
	uploadStart time.Time
	uploaded    bool // guarded by Producer.mu
	attempted   bool // a manifest write holding it was attempted (set by the committer under Producer.mu)
	// inWrite: a manifest write holding it is in flight; maybeWritten: one failed with an
	// unknown outcome (guarded by Producer.mu). DeliveryTimeout fails neither.
	inWrite, maybeWritten bool
	expired               bool  // its appends failed with ErrDeliveryTimeout (guarded by Producer.mu)
	lastErr               error // its last upload's error (guarded by Producer.mu)
	// triedKeys are the keys it was named by in attempted manifest writes (committer only):
	// an entry under its batch number with another key is not its own (an earlier run of a
	// fixed producer id whose row was evicted).
	triedKeys []string
}

// Producer appends to one stream. It is safe for concurrent use.
//
// Appends accumulate into an open batch, which is flushed FlushInterval after its first
// append, when it reaches FlushSizeBytes, or on Flush/Close; an append is never split.
// Flushed batches are encoded and uploaded create-only, several at once, under unique,
// time-sortable keys "<DataPathPrefix>/<12 hex digits of ms><16 random hex digits>". One
// committer commits them in batch order, as many as are ready in one manifest write.
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

	mu        sync.Mutex
	closing   bool
	fatal     error
	open      *batch
	nextNum   uint64
	pending   []*batch // sealed, not yet resolved, in batch order
	toUpload  []*batch
	inputs    int
	bytes     int64
	space     chan struct{} // closed and replaced when backpressure eases
	progress  chan struct{} // closed and replaced when a batch resolves
	upKick    chan struct{}
	comKick   chan struct{}
	lingerKck chan struct{}
	expKick   chan struct{} // wakes expiryLoop (DeliveryTimeout)
	expiries  uint64        // how many times DeliveryTimeout failed batches (Submit's records check it)
	commitErr error         // the committer's last manifest read or write error, nil after a success

	// Committer state (committer goroutine only).
	snap  *manifest.Snapshot
	index *manifest.Index

	sub submitter

	// freeEnc keeps up to maxFreeEncoders encoders of committed batches for reuse: growing a
	// fresh buffer to a batch's size costs more than encoding into a warm one. (A sync.Pool
	// would be emptied by every GC cycle.)
	freeEnc []*batchfmt.Encoder
}

const maxFreeEncoders = 2

// New opens the stream at cfg.ManifestPath (creating it if allowed) and starts the producer's
// goroutines. Close it to drain and stop them.
func New(ctx context.Context, cfg Config) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ProducerID == "" {
		cfg.ProducerID = randomID(8)
	}
	var snap *manifest.Snapshot
	var err error
	octx := ctx
	if cfg.DeliveryTimeout > 0 {
		// Opening the stream is the first step of every append's delivery: a store that
		// does not answer must not hold it for longer (its retries, each waiting for the
		// store's own timeouts, could take hours).
		var cancel context.CancelFunc
		octx, cancel = context.WithTimeout(ctx, cfg.DeliveryTimeout)
		defer cancel()
	}
	if cfg.CreateStream {
		snap, err = manifest.LoadOrCreate(octx, cfg.ObjectStore, cfg.ManifestPath, cfg.StreamConfig, cfg.Now())
	} else {
		snap, err = manifest.LoadWithRetry(octx, cfg.ObjectStore, cfg.ManifestPath, cfg.Backoff)
	}
	if err != nil && octx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("producer: open stream: %w: not opened within %v: %w", ErrDeliveryTimeout, cfg.DeliveryTimeout, causeOf(err))
	}
	if err != nil {
		return nil, fmt.Errorf("producer: open stream: %w", err)
	}
	m, err := newMetrics(cfg.Registerer, cfg.ProducerID)
	if err != nil {
		m.unregister(cfg.Registerer)
		return nil, fmt.Errorf("producer: register metrics: %w", err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &Producer{
		cfg: cfg, store: cfg.ObjectStore, log: cfg.Logger.With("producer_id", cfg.ProducerID), m: m,
		id: cfg.ProducerID, gen: snap.State.Generation, ctx: pctx, cancel: cancel,
		nextNum: 1, space: make(chan struct{}), progress: make(chan struct{}),
		upKick: make(chan struct{}, cfg.UploadConcurrency), comKick: make(chan struct{}, 1), lingerKck: make(chan struct{}, 1), expKick: make(chan struct{}, 1),
		snap: snap, index: manifest.NewIndex(cfg.ObjectStore, snap.State),
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
	p.log.Debug("producer started", "manifest", cfg.ManifestPath, "generation", snap.State.GenerationString(), "first_batch", p.nextNum)
	return p, nil
}

// ID returns the producer id.
func (p *Producer) ID() string { return p.id }

// Append validates in at once (the seeds' limits and record rules, and the stream's
// timestamping mode as last read), waits for room under backpressure (MaxBufferedInputs
// appends and MaxInFlightBytes metered bytes not yet acknowledged) honouring ctx, and adds
// it to the open batch. The returned ticket resolves after the manifest write that commits
// it. Append takes ownership of in's records: their byte slices must not be modified until
// the ticket resolves.
func (p *Producer) Append(ctx context.Context, in batchfmt.AppendInput) (*Ticket, error) {
	return p.append(ctx, in, false, nil, nil, time.Time{})
}

// AppendChained is Append for an append of chain c (see Chain), handed over by the one
// goroutine that hands over c's appends (a nil c: Append). If c's last append went to
// another producer, it first waits (within ctx) until that append has resolved. It fails at
// once with manifest.ErrPrecedingAppendFailed if an append of c has failed.
func (p *Producer) AppendChained(ctx context.Context, in batchfmt.AppendInput, c *Chain) (*Ticket, error) {
	return p.AppendChainedSince(ctx, in, c, time.Time{})
}

// AppendChainedSince is AppendChained for an append its caller received at since, whose
// delivery timeout counts from then. With Config.DeliveryTimeout set:
//   - it is refused with ErrDeliveryTimeout unless it is accepted within half of
//     DeliveryTimeout since then (while it waits for the chain's last append on another
//     producer, or for buffer space);
//   - the time it waited to be accepted is taken off what DeliveryTimeout gives its batch
//     after the flush (the time in the open batch, at most FlushInterval, does not count,
//     as with Append);
//   - the appends of one batch share its bound, which the one that waited longest sets (so
//     an append that did not wait may have as little as half of DeliveryTimeout, and, if
//     its batch fails so, the appends accepted after it fail too, as always).
//
// Otherwise DeliveryTimeout's rules hold: nothing of a failed append is in the stream,
// appends accepted after it fail too, and a batch a manifest write may have committed is
// not failed. It is for a caller whose client gives up on an append some time after
// sending it: the daemon passes the time it received the append, so that the time the
// append waited for its stream's producer to open or for buffer space counts against the
// bound. A zero since, or a DeliveryTimeout of zero, leaves DeliveryTimeout as it is.
func (p *Producer) AppendChainedSince(ctx context.Context, in batchfmt.AppendInput, c *Chain, since time.Time) (*Ticket, error) {
	if p.cfg.DeliveryTimeout <= 0 {
		since = time.Time{}
	}
	if c != nil && c.last != nil && c.lastP != p {
		if testHookChainMove != nil {
			testHookChainMove()
		}
		wctx, cancel := p.acceptWithin(ctx, since)
		err := c.Wait(wctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
				return nil, p.notAccepted("waiting for the chain's last append on another producer")
			}
			return nil, err
		}
	}
	if c.Failed() {
		return nil, fmt.Errorf("producer: %w", manifest.ErrPrecedingAppendFailed)
	}
	t, err := p.append(ctx, in, false, c, nil, since)
	if err == nil && c != nil {
		c.last, c.lastP = t, p
	}
	return t, err
}

// acceptWithin bounds ctx by the time an append its caller received at since must be
// accepted by (AppendChainedSince): half of DeliveryTimeout after since; ctx as it is for a
// zero since. The bound, not ctx, ended a wait if ctx has no error and the bounded
// context's is context.DeadlineExceeded (which it keeps after its cancel).
func (p *Producer) acceptWithin(ctx context.Context, since time.Time) (context.Context, context.CancelFunc) {
	if since.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, since.Add(p.cfg.DeliveryTimeout/2))
}

// notAccepted is the error of an append that missed acceptWithin's bound; why says what it
// waited for.
func (p *Producer) notAccepted(why string) error {
	return fmt.Errorf("%w: append not accepted within half the delivery timeout %v of its arrival (%s)", ErrDeliveryTimeout, p.cfg.DeliveryTimeout, why)
}

// requiresTimestamps reports whether the stream's timestamping mode is client-require, so that
// a record without a timestamp is refused at once instead of at its commit. The mode last
// read may be stale (the stream was reconfigured since, by this process or another): before
// refusing, it is read again from the manifest. A failed read keeps the mode as it was (the
// commit checks the mode in force either way).
func (p *Producer) requiresTimestamps(ctx context.Context) bool {
	if manifest.TimestampingMode(p.tsMode.Load()) != manifest.ClientRequire {
		return false
	}
	if snap, err := manifest.Load(ctx, p.store, p.cfg.ManifestPath); err == nil {
		p.tsMode.Store(uint32(snap.State.Config.Timestamping.Mode))
	}
	return manifest.TimestampingMode(p.tsMode.Load()) == manifest.ClientRequire
}

// append is Append; draining (from Close, for Submit's last batch) is allowed while closing.
// With epoch (Submit's records), it fails with ErrDeliveryTimeout if DeliveryTimeout failed
// batches since the records were submitted (p.expiries moved on), also while it waited for
// buffer space: records accepted before a failed append must not commit after it. A
// non-zero since is AppendChainedSince's (with DeliveryTimeout set).
func (p *Producer) append(ctx context.Context, in batchfmt.AppendInput, draining bool, chain *Chain, epoch *uint64, since time.Time) (*Ticket, error) {
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	for i := range in.Records {
		if !in.Records[i].HasTimestamp && p.requiresTimestamps(ctx) {
			return nil, fmt.Errorf("producer: record %d: %w", i, manifest.ErrTimestampRequired)
		}
	}
	own := &batchfmt.AppendInput{Records: in.Records}
	if in.MatchSeqNum != nil {
		v := *in.MatchSeqNum
		own.MatchSeqNum = &v
	}
	if in.FencingToken != nil {
		v := *in.FencingToken
		own.FencingToken = &v
	}
	metered := int64(own.MeteredSize())
	actx, cancel := p.acceptWithin(ctx, since)
	err := p.acquire(actx, metered, draining)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return nil, p.notAccepted("no buffer space")
		}
		return nil, err
	}
	t := &Ticket{done: make(chan struct{}), records: len(own.Records), metered: metered, start: time.Now(), chain: chain}
	p.mu.Lock()
	defer p.mu.Unlock()
	if (p.closing && !draining) || p.fatal != nil {
		p.releaseLocked(1, metered)
		if p.fatal != nil {
			return nil, p.fatal
		}
		return nil, ErrClosed
	}
	if epoch != nil && *epoch != p.expiries {
		p.releaseLocked(1, metered)
		return nil, errSubmittedBeforeExpiry
	}
	var preWait time.Duration
	if !since.IsZero() {
		if preWait = max(time.Since(since), 0); preWait > p.cfg.DeliveryTimeout/2 {
			p.releaseLocked(1, metered)
			return nil, p.notAccepted(fmt.Sprintf("it waited %v", preWait.Round(time.Millisecond)))
		}
	}
	b := p.open
	if b == nil {
		var enc *batchfmt.Encoder
		if n := len(p.freeEnc); n > 0 {
			enc, p.freeEnc = p.freeEnc[n-1], p.freeEnc[:n-1]
			enc.Reset()
		} else {
			enc = batchfmt.NewEncoder(p.cfg.BatchCompression)
		}
		b = &batch{num: p.nextNum, enc: enc, opened: time.Now()}
		p.nextNum++
		p.open = b
		select {
		case p.lingerKck <- struct{}{}:
		default:
		}
	}
	if b.enc.Add(own) < 0 {
		// Cannot happen after Validate; rebuild the encoder so the batch stays usable.
		err := b.enc.Err()
		b.enc = batchfmt.NewEncoder(p.cfg.BatchCompression)
		for _, a := range b.appends {
			b.enc.Add(a)
		}
		if len(b.appends) == 0 {
			// Do not leave an empty batch (or a gap in the batch numbers) behind.
			p.open = nil
			p.nextNum--
		}
		p.releaseLocked(1, metered)
		return nil, fmt.Errorf("producer: %w", err)
	}
	b.appends = append(b.appends, own)
	b.tickets = append(b.tickets, t)
	b.chained = b.chained || chain != nil
	b.metered += metered
	b.preWait = max(b.preWait, preWait)
	if p.cfg.FlushInterval == 0 || b.enc.EncodedSize() >= p.cfg.FlushSizeBytes {
		p.sealLocked()
	}
	return t, nil
}

// AppendSync appends and waits for the outcome. If ctx ends first it returns ctx's error;
// the append may still be committed.
func (p *Producer) AppendSync(ctx context.Context, in batchfmt.AppendInput) (Ack, error) {
	t, err := p.Append(ctx, in)
	if err != nil {
		return Ack{}, err
	}
	return t.Wait(ctx)
}

// acquire reserves one input and n metered bytes, waiting while over the limits. A lone
// input always fits (n never exceeds MaxInFlightBytes after validation).
func (p *Producer) acquire(ctx context.Context, n int64, draining bool) error {
	return p.waitRoom(ctx, n, draining, true)
}

// waitRoom waits until one more input of n bytes fits, and reserves it if reserve is set.
func (p *Producer) waitRoom(ctx context.Context, n int64, draining, reserve bool) error {
	for {
		p.mu.Lock()
		if p.fatal != nil {
			err := p.fatal
			p.mu.Unlock()
			return err
		}
		if p.closing && !draining {
			p.mu.Unlock()
			return ErrClosed
		}
		if p.inputs == 0 || (p.inputs < p.cfg.MaxBufferedInputs && p.bytes+n <= p.cfg.MaxInFlightBytes) {
			if reserve {
				p.inputs++
				p.bytes += n
			}
			p.mu.Unlock()
			return nil
		}
		// Full: make sure what is buffered is on its way, then wait.
		p.sealLocked()
		ch := p.space
		p.mu.Unlock()
		if err := ctx.Err(); err != nil {
			// Ended already: refuse now rather than race the wait against the room that
			// the seal above may free meanwhile (a select takes either at random).
			return fmt.Errorf("producer: waiting for buffer space: %w", err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("producer: waiting for buffer space: %w", ctx.Err())
		}
	}
}

func (p *Producer) releaseLocked(inputs int, bytes int64) {
	p.inputs -= inputs
	p.bytes -= bytes
	close(p.space)
	p.space = make(chan struct{})
}

// sealLocked closes the open batch and queues it for upload.
func (p *Producer) sealLocked() {
	b := p.open
	if b == nil {
		return
	}
	p.open = nil
	b.sealed = time.Now()
	b.arrivalMs = uint64(max(p.cfg.Now().UnixMilli(), 0))
	p.pending = append(p.pending, b)
	p.toUpload = append(p.toUpload, b)
	select {
	case p.upKick <- struct{}{}:
	default:
	}
	if p.cfg.DeliveryTimeout > 0 {
		b.deadline = b.sealed.Add(p.cfg.DeliveryTimeout - b.preWait)
		select {
		case p.expKick <- struct{}{}:
		default:
		}
	}
}

// timerLoop runs step on every kick and whenever the time step last asked for has passed,
// until the producer stops; step returns how long until it wants to run again (0: only on
// a kick).
func (p *Producer) timerLoop(kick <-chan struct{}, step func() time.Duration) {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-p.ctx.Done():
			timer.Stop()
			return
		case <-kick:
		case <-timer.C:
		}
		if d := step(); d > 0 {
			timer.Reset(d)
		}
	}
}

// expiryLoop applies DeliveryTimeout on a timer of its own, so that it holds while the
// committer waits on a manifest write that does not return and while uploads hang.
func (p *Producer) expiryLoop() {
	p.timerLoop(p.expKick, func() time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		if next := p.expireLocked(time.Now()); !next.IsZero() {
			return max(time.Until(next), time.Nanosecond)
		}
		return 0
	})
}

// lingerLoop flushes the open batch FlushInterval after it opened.
func (p *Producer) lingerLoop() {
	p.timerLoop(p.lingerKck, func() time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		if b := p.open; b != nil {
			if wait := p.cfg.FlushInterval - time.Since(b.opened); wait > 0 {
				return wait
			}
			p.sealLocked()
		}
		return 0
	})
}

func (p *Producer) uploadLoop() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		var b *batch
		if len(p.toUpload) > 0 {
			b = p.toUpload[0]
			p.toUpload = p.toUpload[1:]
		}
		p.mu.Unlock()
		if b == nil {
			select {
			case <-p.upKick:
				continue
			case <-p.ctx.Done():
				return
			}
		}
		if err := p.upload(b); errors.Is(err, errExpired) {
			continue // its appends failed with ErrDeliveryTimeout
		} else if err != nil {
			return // aborted; Close fails the tickets
		}
		if b.data == nil {
			continue // failed to encode; failAllLocked resolved it
		}
		p.mu.Lock()
		b.uploaded = true
		p.mu.Unlock()
		select {
		case p.comKick <- struct{}{}:
		default:
		}
	}
}

// logRetry logs a "failed, retrying" line with args, the error's class and the error: at
// Error when the store refuses (objectstore.Refused), which retrying cures only once an
// operator creates the bucket or fixes the credentials, at Warn for everything else.
func (p *Producer) logRetry(msg string, err error, args ...any) {
	level := slog.LevelWarn
	if objectstore.Refused(err) {
		level = slog.LevelError
	}
	p.log.Log(p.ctx, level, msg, append(args, "class", objectstore.ErrorClass(err), "err", err)...)
}

// upload writes b's object create-only under a fresh key, retrying (each attempt under a new
// key, so an attempt with an unknown outcome can never be mistaken for another) until it
// succeeds, the producer is aborted, or b's appends fail with ErrDeliveryTimeout (errExpired).
func (p *Producer) upload(b *batch) error {
	if b.data == nil {
		data, err := b.enc.Finish()
		if err != nil {
			// Cannot happen: every append was validated and FlushSizeBytes keeps objects
			// far below batchfmt.MaxObjectBytes. Fail loudly rather than hang.
			p.log.Error("encode batch", "batch", b.num, "err", err)
			p.mu.Lock()
			p.failAllLocked(fmt.Errorf("producer: encode batch %d: %w", b.num, err))
			p.mu.Unlock()
			return nil
		}
		b.data = data // aliases b.enc's buffer until recycle
	}
	for attempt := 0; ; attempt++ {
		start := time.Now()
		key := fmt.Sprintf("%s/%012x%s", p.cfg.DataPathPrefix, max(p.cfg.Now().UnixMilli(), 0), randomID(8))
		_, err := objectstore.PutBytes(p.ctx, p.store, key, b.data, objectstore.IfAbsent())
		if err == nil {
			b.key, b.uploadStart = key, start
			p.m.batches.Inc()
			p.m.uploadBytes.Add(float64(len(b.data)))
			return nil
		}
		if p.ctx.Err() != nil {
			return p.ctx.Err()
		}
		p.m.uploadErrors.Inc()
		if errors.Is(err, objectstore.ErrConditionsUnsupported) {
			// The server does not honour conditional writes, which the store now refuses
			// for good: no upload, and no manifest write, can succeed. A manifest write
			// already in flight is the committer's to resolve (its next one fails too).
			p.mu.Lock()
			p.failUnwrittenLocked(fmt.Errorf("producer: %w", err))
			p.mu.Unlock()
			return err
		}
		p.mu.Lock()
		b.lastErr = err // the cause expiryLoop names if the batch expires
		p.mu.Unlock()
		p.logRetry("upload failed, retrying", err, "batch", b.num, "key", key, "attempt", attempt)
		if err := p.cfg.Backoff.Sleep(p.ctx, attempt); err != nil {
			return err
		}
		p.mu.Lock()
		expired := b.expired // by expiryLoop, meanwhile
		p.mu.Unlock()
		if expired {
			return errExpired
		}
	}
}

// expireLocked applies DeliveryTimeout at now: it finds the oldest pending batch that no
// manifest write may have committed (none in flight holds it, and none that held it had an
// unknown outcome) and is past its deadline: flushed DeliveryTimeout ago or more, less the
// longest time an append of it waited to be accepted (AppendChainedSince). It fails that
// batch's appends with ErrDeliveryTimeout, and those of every batch after it, pending (none
// of which a write may have committed either: the committer takes batches in order, as a
// prefix of pending) or still open, and drops them; Submit's records waiting for their
// append see the count of expiries change and fail too. So no append commits after one
// accepted before it has failed so. Batches before it are left to commit. It returns the
// earliest deadline of the batches left that a write may not have committed (zero if none,
// or no timeout is set).
func (p *Producer) expireLocked(now time.Time) (next time.Time) {
	timeout := p.cfg.DeliveryTimeout
	if timeout <= 0 {
		return time.Time{}
	}
	j := -1
	for i := p.unwrittenLocked(); i < len(p.pending); i++ {
		d := p.pending[i].deadline
		if !now.Before(d) {
			j = i
			break
		}
		if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	if j < 0 {
		return next
	}
	first := p.pending[j]
	// How long after its flush it failed: DeliveryTimeout, less the time an append of it
	// waited to be accepted.
	within := fmt.Sprint(timeout)
	if w := first.preWait.Round(time.Millisecond); w > 0 {
		within = fmt.Sprintf("%v of its flush (%v of the delivery timeout %v spent before an append of it was accepted)", timeout-w, w, timeout)
	}
	var cause error
	switch {
	case first.uploaded && p.commitErr != nil:
		cause = fmt.Errorf("%w: batch %d stored but not committed within %v: %w", ErrDeliveryTimeout, first.num, within, causeOf(p.commitErr))
	case first.uploaded:
		cause = fmt.Errorf("%w: batch %d stored but not committed within %v (no manifest write committed it in time)", ErrDeliveryTimeout, first.num, within)
	case first.lastErr != nil:
		cause = fmt.Errorf("%w: batch %d not stored within %v: %w", ErrDeliveryTimeout, first.num, within, causeOf(first.lastErr))
	default:
		cause = fmt.Errorf("%w: batch %d not stored within %v (no store request finished)", ErrDeliveryTimeout, first.num, within)
	}
	batches, appends := p.dropFromLocked(j, func(b *batch) error {
		if b == first {
			return cause
		}
		return fmt.Errorf("%w: batch %d failed after batch %d: %w", ErrDeliveryTimeout, b.num, first.num, cause)
	})
	p.expiries++
	p.log.Error("appends failed: their batches were not committed within the delivery timeout", "batches", batches, "appends", appends,
		"first_batch", first.num, "timeout", timeout, "within", within, "err", cause)
	return next
}

// unwrittenLocked returns the index of the oldest pending batch that no manifest write may
// have committed: none in flight holds it, and none that held it had an unknown outcome.
// The batches before it are the committer's to resolve; it and every batch after it (the
// committer takes batches in order, as a prefix of pending) are not in the stream.
func (p *Producer) unwrittenLocked() int {
	i := 0
	for i < len(p.pending) && (p.pending[i].inWrite || p.pending[i].maybeWritten) {
		i++
	}
	return i
}

// dropFromLocked fails the appends of pending[i:] and of the open batch, each batch with
// errOf(it), and drops them (marked expired, so that uploaders and the committer leave
// them). It returns how many batches and appends it failed.
func (p *Producer) dropFromLocked(i int, errOf func(*batch) error) (batches, appends int) {
	dropped := p.pending[i:len(p.pending):len(p.pending)]
	if p.open != nil {
		dropped = append(dropped, p.open)
		p.open = nil
	}
	for _, b := range dropped {
		b.expired = true
		appends += len(b.tickets)
		p.resolveLocked(b, nil, Position{}, errOf(b))
	}
	p.pending = p.pending[:i:i]
	kept := p.toUpload[:0]
	for _, b := range p.toUpload {
		if !b.expired {
			kept = append(kept, b)
		}
	}
	clear(p.toUpload[len(kept):])
	p.toUpload = kept
	return len(dropped), appends
}

// failUnwrittenLocked fails the producer with err from outside the committer (an uploader):
// like failAllLocked, except that the batches a manifest write may have committed (one in
// flight, one with an unknown outcome) are left to the committer, which resolves them from
// its write or the manifest; it fails the rest with err, and refuses new appends.
func (p *Producer) failUnwrittenLocked(err error) {
	if p.fatal == nil {
		p.fatal = err
		p.log.Error("producer failed", "err", err)
	}
	p.sealLocked()
	p.dropFromLocked(p.unwrittenLocked(), func(*batch) error { return err })
}

// Err returns the error the producer failed with (it then refuses every append with it), or
// nil while it works: an owner that keeps producers open (as the daemon does, one per
// stream) should replace a failed one.
func (p *Producer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal
}

// Flush flushes the open batch (and Submit's pending records) and waits until every append
// accepted before the call has resolved, or ctx ends. The outcomes are the tickets': Flush
// returns nil when appends were rejected (a failed condition, say), and an error only when
// ctx ends, the producer failed (see Close) or is closed (ErrClosed).
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

func (p *Producer) waitResolved(ctx context.Context, target uint64) error {
	for {
		p.mu.Lock()
		// Every batch up to target is sealed (the caller sealed the open one), so it has
		// resolved once none of them is pending (pending is in batch order). Batches do not
		// resolve in order: DeliveryTimeout can fail later ones while an earlier one, held by
		// a manifest write, is still pending.
		done := len(p.pending) == 0 || p.pending[0].num > target
		fatal, ch := p.fatal, p.progress
		p.mu.Unlock()
		if done || fatal != nil {
			return fatal // the producer's failure, even when it resolved every batch to target
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

// Close drains the producer: it stops accepting appends (they fail with ErrClosed), flushes
// what is buffered, waits until every accepted append has resolved, then stops the
// producer's goroutines and waits for them. If ctx ends first, Close aborts: uploads and
// commits in progress are cancelled, tickets not yet resolved fail with ErrAborted (or
// ErrOutcomeUnknown when a manifest write holding them had an unknown outcome), and Close
// returns ctx's error after the goroutines have stopped. The store is not closed. A later
// Close waits until the producer's goroutines have stopped and returns nil (the first Close
// reported the outcome).
func (p *Producer) Close(ctx context.Context) error {
	// Stop Submit and Append (in that order, so no record is left in the client-side batch),
	// then append Submit's last batch. Whoever holds the submitter's lock may be waiting for
	// buffer space that a stuck store never frees: if ctx ends first, the producer's context
	// is cancelled, which ends that wait.
	locked := make(chan struct{})
	go func() {
		p.sub.mu.Lock() // for Close, which unlocks it
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
	var err error
	p.mu.Lock()
	p.sealLocked()
	target := p.nextNum - 1
	fatal := p.fatal
	p.mu.Unlock()
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
	for _, b := range p.pending {
		e := ErrAborted
		if b.attempted {
			e = ErrOutcomeUnknown
		}
		p.resolveLocked(b, nil, Position{}, e)
	}
	p.pending = nil
	p.toUpload = nil
	p.mu.Unlock()
	p.freeEnc = nil
	p.sub.abort(ErrAborted)
	p.m.unregister(p.cfg.Registerer)
	return err
}

// resolveLocked resolves b's tickets with results (nil: all fail with err).
func (p *Producer) resolveLocked(b *batch, results []manifest.AppendResult, tail Position, err error) {
	for i, t := range b.tickets {
		switch {
		case results == nil:
			t.err = err
			p.m.appendsFailed.Inc()
		case results[i].Err != nil:
			t.err = results[i].Err
			p.m.appendsRejected.Inc()
		default:
			t.ack = Ack{Start: results[i].Start, End: results[i].End, Tail: tail}
			p.m.appendsOK.Inc()
			p.m.records.Add(float64(t.records))
			p.m.bytes.Add(float64(t.metered))
			p.m.ackLatency.Observe(time.Since(t.start).Seconds())
		}
		if c := t.chain; t.err != nil && c != nil {
			if !c.failed.Load() || (c.failP == p && b.num < c.failNum) {
				c.failP, c.failNum = p, b.num
			}
			c.failed.Store(true)
		}
		close(t.done)
	}
	p.releaseLocked(len(b.tickets), b.metered)
	close(p.progress)
	p.progress = make(chan struct{})
}

// recycleLocked keeps a committed batch's encoder for reuse. Only the committer calls it, for
// batches it resolved from a successful write: no uploader holds their bytes any more.
func (p *Producer) recycleLocked(b *batch) {
	if b.enc != nil && len(p.freeEnc) < maxFreeEncoders && !p.closing {
		p.freeEnc = append(p.freeEnc, b.enc)
	}
	b.enc, b.data = nil, nil
}

// failAllLocked makes err fatal: every pending ticket fails with it (joined with
// ErrOutcomeUnknown for batches a manifest write was attempted for).
func (p *Producer) failAllLocked(err error) {
	if p.fatal == nil {
		p.fatal = err
		p.log.Error("producer failed", "err", err)
	}
	p.sealLocked()
	for _, b := range p.pending {
		e := err
		if b.attempted {
			e = errors.Join(ErrOutcomeUnknown, err)
		}
		p.resolveLocked(b, nil, Position{}, e)
	}
	p.pending = nil
	p.toUpload = nil
}
