package consumer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/manifest"
)

// Consumer is the one active member of a consumer group on a stream. Open bumps the group's
// epoch in the manifest, which fences every earlier member, and reads from the group's
// checkpoint on, following the tail. Acknowledgements advance the checkpoint: they are
// collected in memory and written (a conditional manifest write) at most AckInterval after
// the first pending one, as soon as AckRecords records are pending, and on Flush and Close.
// A member whose stream was deleted (or replaced by a new generation, whose group of the same
// name starts its epochs over) writes nothing more: Ack, Flush and Close return an error
// matching manifest.ErrGenerationChanged.
//
// The checkpoint is the first seq_num not acknowledged: records acknowledged out of order
// move it only once every record below them is acknowledged. Records the read skipped
// (SkipCommands, records below the trim point) count as acknowledged.
//
// Next, Ack, AckThrough, Flush and Close may be called from different goroutines, but Next
// from one at a time.
type Consumer struct {
	r     *Reader
	s     *Session
	cfg   GroupConfig
	group string
	epoch uint64
	gen   [16]byte // the stream generation whose group this member joined

	nextMu sync.Mutex // serialises Next

	mu        sync.Mutex
	low       uint64     // checkpoint candidate: every seq_num below it is acknowledged
	written   uint64     // the checkpoint in the manifest, as far as we know
	delivered uint64     // every seq_num below it was handed out (or skipped)
	acked     []seqRange // acknowledged ranges above low, sorted, disjoint, not touching low
	fenced    error      // sticky *FencedError, or manifest.ErrGenerationChanged
	// cc sends checkpoints to the stream's committer, and says when to write them directly.
	cc        *commitclient.Client
	pendingAt time.Time // when the first unwritten ack arrived (zero: none)
	closed    bool
	ts        tsTrack // timestamps of the delivered records not yet acknowledged

	lagMu   sync.Mutex // serialises lag gauge updates, and their removal on Close
	lag     *lagMetrics
	lagSrc  *lagSource
	stream  string // the stream label of the lag gauges
	lagDone bool   // the gauges were removed

	flushMu sync.Mutex // serialises checkpoint writes
	kick    chan struct{}
	quit    chan struct{}
	wg      sync.WaitGroup
}

type seqRange struct{ from, to uint64 } // [from, to)

// GroupOptions modify Open.
type GroupOptions struct {
	// SkipCommands leaves command records out of what Next returns (they are acknowledged
	// implicitly).
	SkipCommands bool
}

// Open joins the consumer group cfg.Group of the stream, creating the group if needed (not
// the stream: a stream that does not exist yet is ErrStreamNotFound; producer.New creates
// one), and becomes its active member: the group's epoch is bumped with a conditional
// manifest write, so the previous member is fenced (its next ack fails with *FencedError).
// Reading resumes at the group's checkpoint (or at the first readable record, if retention
// went past it); a group created here starts per cfg.NewGroupStart.
//
// The member exports its lag (see Lag) on cfg.Registerer, from its acknowledged position
// (which the manifest's checkpoint follows within AckInterval) as of its last Next, Poll or
// acknowledgement, the age taken at the scrape: sluice_consumer_group_lag_records and
// sluice_consumer_group_lag_seconds, labelled stream (cfg.StreamName) and group. Close
// removes them.
func Open(ctx context.Context, cfg GroupConfig, opts GroupOptions) (*Consumer, error) {
	cfg.Config = cfg.Config.withNilDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cc, err := commitclient.New(cfg.Committer)
	if err != nil {
		return nil, err // Validate checked it
	}
	r, err := NewReader(cfg.Config)
	if err != nil {
		return nil, err
	}
	lm, err := newLagMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("consumer: register metrics: %w", err)
	}
	var epoch uint64
	snap, err := manifest.Open(cfg.ObjectStore, cfg.Stream.ManifestKey(), manifest.WithBackoff(cfg.Backoff)).Update(ctx, func(st *manifest.State) error {
		_, existed := st.Groups[cfg.Group]
		epoch = st.OpenGroup(cfg.Group)
		if !existed && cfg.NewGroupStart == StartAtTail {
			g := st.Groups[cfg.Group]
			g.Checkpoint = st.Tail.SeqNum
			st.Groups[cfg.Group] = g
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			return nil, &notFoundError{err}
		}
		return nil, fmt.Errorf("consumer: open group %q: %w", cfg.Group, err)
	}
	checkpoint := snap.State.Groups[cfg.Group].Checkpoint
	s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(checkpoint).Clamped(), Follow: true, SkipCommands: opts.SkipCommands})
	if err != nil {
		return nil, err
	}
	cc.Observe(snap.State.Committer)
	c := &Consumer{r: r, s: s, cfg: cfg, group: cfg.Group, epoch: epoch, gen: snap.State.Generation, cc: cc,
		low: s.Position(), written: checkpoint, delivered: s.Position(),
		kick: make(chan struct{}, 1), quit: make(chan struct{}), lag: lm, lagSrc: &lagSource{}, stream: cfg.StreamName}
	if c.stream == "" {
		c.stream = cfg.Stream.ManifestKey()
	}
	c.updateLag(ctx)
	lm.add(c.stream, c.group, c.lagSrc)
	s.onRefresh = c.checkState
	if c.low > checkpoint {
		c.pendingAt = time.Now() // records below the readable start count as acknowledged
	}
	cfg.Logger.Info("joined consumer group", "group", cfg.Group, "epoch", epoch, "checkpoint", checkpoint, "start", c.low)
	c.wg.Add(1)
	go c.flushLoop()
	return c, nil
}

// Epoch is this member's epoch.
func (c *Consumer) Epoch() uint64 { return c.epoch }

// Checkpoint returns the acknowledged position in memory (every record below it is
// acknowledged) and the checkpoint last written to the manifest.
func (c *Consumer) Checkpoint() (acked, written uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.low, c.written
}

// Next returns the next batch of records, waiting at the tail until records arrive or ctx
// ends. A fenced member gets *FencedError.
func (c *Consumer) Next(ctx context.Context) (ReadBatch, error) { return c.next(ctx, true) }

// Poll is Next without the wait at the tail: with no record available it returns an empty
// batch carrying the tail, whose NextSeq has passed every record the read skips (command
// records, trimmed ones). It still waits for batch objects being fetched, so a slow read is
// not taken for the tail.
func (c *Consumer) Poll(ctx context.Context) (ReadBatch, error) { return c.next(ctx, false) }

func (c *Consumer) next(ctx context.Context, wait bool) (ReadBatch, error) {
	c.nextMu.Lock()
	defer c.nextMu.Unlock()
	if err := c.check(); err != nil {
		return ReadBatch{}, err
	}
	prev := c.s.Position()
	var b ReadBatch
	var err error
	if wait {
		b, err = c.s.Next(ctx)
	} else {
		b, err = c.s.Read(ctx, c.r.cfg.MaxBatchRecords, c.r.cfg.MaxBatchBytes, false)
	}
	if ferr := c.checkState(c.s.State()); ferr != nil {
		return ReadBatch{}, ferr
	}
	if len(b.Records) > 0 || b.NextSeq > prev {
		heldSeq, heldTS, held := c.s.heldRecord() // before c.mu: the read takes c.mu under s.mu
		c.mu.Lock()
		// Whatever the read skipped between prev and NextSeq counts as acknowledged.
		at := prev
		for i := range b.Records {
			if sq := b.Records[i].SeqNum; sq > at {
				c.addLocked(at, sq)
			}
			at = b.Records[i].SeqNum + 1
		}
		if b.NextSeq > at {
			c.addLocked(at, b.NextSeq)
		}
		c.delivered = max(c.delivered, b.NextSeq)
		c.ts.add(b.Records)
		if held {
			c.ts.add([]SequencedRecord{{SeqNum: heldSeq, Timestamp: heldTS}}) // the next record's, for the lag
		}
		c.mu.Unlock()
	}
	c.updateLag(ctx)
	return b, err
}

// Ack acknowledges one delivered record.
func (c *Consumer) Ack(seq uint64) error { return c.ack(seq, seq+1) }

// AckThrough acknowledges every delivered record up to and including seq.
func (c *Consumer) AckThrough(seq uint64) error { return c.ack(0, seq+1) }

func (c *Consumer) ack(from, to uint64) error {
	if err := c.check(); err != nil {
		return err
	}
	// The newest manifest the read has seen (it polls while following) may already show a
	// newer member.
	if err := c.checkState(c.s.State()); err != nil {
		return err
	}
	c.mu.Lock()
	if to > c.delivered {
		d := c.delivered
		c.mu.Unlock()
		return fmt.Errorf("%w: seq_num %d (delivered up to %d)", ErrNotDelivered, to-1, d)
	}
	c.addLocked(from, to)
	full := c.low-c.written >= uint64(c.cfg.AckRecords)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lagTimeout)
	c.updateLag(ctx)
	cancel()
	if full {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// addLocked marks [from, to) acknowledged and advances low.
func (c *Consumer) addLocked(from, to uint64) {
	from = max(from, c.low)
	if from >= to {
		return
	}
	if c.pendingAt.IsZero() {
		c.pendingAt = time.Now()
	}
	if from == c.low {
		c.low = to
	} else {
		i := sort.Search(len(c.acked), func(i int) bool { return c.acked[i].to >= from })
		j := i
		for j < len(c.acked) && c.acked[j].from <= to {
			from, to = min(from, c.acked[j].from), max(to, c.acked[j].to)
			j++
		}
		c.acked = append(c.acked[:i], append([]seqRange{{from, to}}, c.acked[j:]...)...)
	}
	for len(c.acked) > 0 && c.acked[0].from <= c.low {
		c.low = max(c.low, c.acked[0].to)
		c.acked = c.acked[1:]
	}
}

// check returns the sticky fenced error, or ErrClosed.
func (c *Consumer) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fenced != nil {
		return c.fenced
	}
	if c.closed {
		return ErrClosed
	}
	return nil
}

func (c *Consumer) checkState(st *manifest.State) error {
	if st.Generation != c.gen {
		return c.setGone()
	}
	g, ok := st.Groups[c.group]
	if ok && g.Epoch == c.epoch {
		return nil
	}
	return c.setFenced(g.Epoch)
}

func (c *Consumer) setFenced(current uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fenced == nil {
		c.fenced = &FencedError{Group: c.group, Epoch: c.epoch, Current: current}
		c.r.m.fenced.Inc()
		c.r.cfg.Logger.Warn("fenced by a newer group member", "group", c.group, "epoch", c.epoch, "current", current)
	}
	return c.fenced
}

// setGone ends the membership for good: the stream was deleted (and perhaps created again,
// with a group of the same name whose epochs start over), so no acknowledgement of this
// member may reach it.
func (c *Consumer) setGone() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fenced == nil {
		c.fenced = fmt.Errorf("consumer: group %q: %w: %s", c.group, manifest.ErrGenerationChanged, c.r.cfg.Stream.ManifestKey())
		c.r.cfg.Logger.Warn("the stream was deleted; leaving its group", "group", c.group, "epoch", c.epoch)
	}
	return c.fenced
}

// Check reads the stream's manifest and reports whether this member still holds the group, as
// Next and Ack would: a *FencedError once a newer member has joined, an error matching
// manifest.ErrGenerationChanged once the stream was deleted, or ErrClosed; nil otherwise, and
// the read's own error if the manifest cannot be read. For a member busy with delivered
// records (retrying a failing handler) that neither reads nor acknowledges for a while.
func (c *Consumer) Check(ctx context.Context) error {
	if err := c.check(); err != nil {
		return err
	}
	snap, err := manifest.Open(c.r.store, c.r.cfg.Stream.ManifestKey()).Load(ctx)
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			return c.setGone()
		}
		return err
	}
	return c.checkState(snap.State)
}

// Flush writes the pending acknowledgements now. A fenced member gets *FencedError.
func (c *Consumer) Flush(ctx context.Context) error {
	if err := c.check(); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	return c.flush(ctx)
}

func (c *Consumer) flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	low, written, fenced := c.low, c.written, c.fenced
	c.mu.Unlock()
	if fenced != nil {
		return fenced
	}
	if low <= written {
		// Nothing new; still tell a fenced member so on an explicit flush.
		return nil
	}
	if done, err := c.flushVia(ctx, low); done {
		return err
	}
	h := manifest.Open(c.r.store, c.r.cfg.Stream.ManifestKey(), manifest.WithBackoff(c.r.cfg.Backoff))
	res, err := writeCheckpointDirect(ctx, h, c.gen, c.group, c.epoch, low)
	switch {
	case err != nil:
		c.r.m.ackErrors.Inc()
		return fmt.Errorf("consumer: write checkpoint of group %q: %w", c.group, err)
	case res.gone:
		return c.setGone()
	case res.fenced:
		return c.setFenced(res.current)
	}
	snap := res.snap
	c.r.m.ackWrites.Inc()
	if ferr := c.checkState(snap.State); ferr != nil {
		return ferr
	}
	c.cc.Observe(snap.State.Committer)
	c.wrote(snap.State.Groups[c.group].Checkpoint)
	return nil
}

// wrote records that the group's checkpoint is at least cp in the manifest.
func (c *Consumer) wrote(cp uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written = max(c.written, cp)
	if c.low <= c.written {
		c.pendingAt = time.Time{}
	} else {
		c.pendingAt = time.Now()
	}
}

// flushLoop writes pending acknowledgements AckInterval after the first of them, or when
// kicked (AckRecords pending). It stops on Close.
func (c *Consumer) flushLoop() {
	defer c.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.quit
		cancel()
	}()
	step := max(c.cfg.AckInterval/4, time.Millisecond)
	tick := time.NewTicker(step)
	defer tick.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-c.kick:
		case <-tick.C:
			c.mu.Lock()
			// At the last tick before AckInterval has passed: the next one may come after.
			due := !c.pendingAt.IsZero() && time.Since(c.pendingAt) >= c.cfg.AckInterval-step
			c.mu.Unlock()
			if !due {
				continue
			}
		}
		if err := c.flush(ctx); err != nil && ctx.Err() == nil {
			if errors.Is(err, ErrFenced) {
				return
			}
			c.r.cfg.Logger.Warn("checkpoint write failed; retrying on the next tick", "group", c.group, "err", err)
		}
	}
}

// Close writes the pending acknowledgements (unless fenced), stops the background writer and
// the read, and waits for them. It returns the final write's error (*FencedError if fenced).
func (c *Consumer) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.quit)
	c.wg.Wait()
	err := c.flush(ctx)
	c.s.cancel() // wakes a Next waiting at the tail
	c.nextMu.Lock()
	c.s.Close()
	c.nextMu.Unlock()
	c.removeLag()
	return err
}
