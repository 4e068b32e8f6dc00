package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/s2api"
)

// consume through a daemon: the member joins its group with the daemon's join route, reads
// from the checkpoint with an SSE read session (the read path of sluice read), and writes its
// acknowledgements with the ack route, batched as a library member batches them (at most
// --ack-interval after the first pending one, at once when defaultAckRecords are pending,
// and on exit). The daemon writes each checkpoint as a library member would, fenced by the
// member's epoch.

// defaultAckRecords is a library member's consumer.GroupConfig.AckRecords default.
var defaultAckRecords = consumer.DefaultGroupConfig().AckRecords

func runConsumeDaemon(cmd *cobra.Command, g *globals, f *consumeFlags, name string) error {
	ctx := cmd.Context()
	var errs []error
	for _, fl := range []string{"committer", "committer-token", "committer-timeout", "metrics-listen"} {
		if cmd.Flags().Changed(fl) {
			errs = append(errs, fmt.Errorf("--%s needs a store (--store): through a daemon, the daemon writes the group's checkpoints (with its committer) and serves its lag on its /metrics", fl))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	b, err := newAPIBackend(g, &f.basin)
	if err != nil {
		return err
	}
	defer b.close()
	// The daemon's errors come worded (streamErr, groupErr) from the calls that make them.
	ce := consumeEnv{log: b.log, where: b.where, readErr: func(_ string, err error) error { return err }}
	start := s2api.GroupStartHead
	if f.startAt == "tail" {
		start = s2api.GroupStartTail
	}
	m, err := b.joinGroup(ctx, name, f.group, start)
	if err != nil {
		return ce.consumeErr(name, f.group, err)
	}
	b.log.Info("joined consumer group", "group", f.group, "epoch", m.Epoch, "checkpoint", m.Checkpoint)
	dm, err := openDaemonMember(ctx, b, name, m, f)
	if err != nil {
		return ce.consumeErr(name, f.group, err)
	}
	b.log.Info("consumer started", "stream", name, "group", f.group, "epoch", m.Epoch, "from", m.Checkpoint)
	// With --stop-at-tail the read does not follow: it ends at the tail by itself, so the
	// token needs no check-tail, only read.
	return consumeRun(ctx, ce, dm, f, name, math.MaxUint64)
}

// daemonMember is a group member through a daemon. Next and Poll are called from one
// goroutine; its acknowledgements are written by its own goroutine, which Close stops.
type daemonMember struct {
	b           *apiBackend
	name        string
	m           s2api.JoinGroupResponse
	ackInterval time.Duration
	ackRecords  uint64
	follow      bool

	read   *apiRead
	rctx   context.Context // the read's: ended by Close, or when the member is fenced
	rstop  context.CancelCauseFunc
	closed bool // read by Next's goroutine only

	mu        sync.Mutex
	low       uint64 // every seq_num below it is acknowledged (or skipped)
	written   uint64 // the checkpoint as the daemon last answered it
	lastRec   uint64 // the seq_num after the last record delivered
	readEnd   uint64 // the seq_num after the last record the read went past (skipped ones too)
	pendingAt time.Time
	contact   time.Time // the last answer of the daemon about the group
	fenced    error     // sticky: *consumer.FencedError, or the stream's deletion

	flushMu sync.Mutex // serialises ack calls
	kick    chan struct{}
	quit    chan struct{}
	wg      sync.WaitGroup
}

func openDaemonMember(ctx context.Context, b *apiBackend, name string, m s2api.JoinGroupResponse, f *consumeFlags) (*daemonMember, error) {
	// The read ends with ctx (SIGINT/SIGTERM), on Close, or when the member is fenced.
	rctx, stop := context.WithCancelCause(ctx)
	req := consumer.ReadRequest{Start: consumer.AtSeqNum(m.Checkpoint).Clamped(), Follow: !f.stopAtTail, SkipCommands: !f.includeCommands}
	sess, err := b.openRead(rctx, name, req)
	if err != nil {
		stop(nil)
		return nil, err
	}
	d := &daemonMember{b: b, name: name, m: m, ackInterval: f.ackInterval, ackRecords: uint64(defaultAckRecords), follow: !f.stopAtTail,
		read: sess.(*apiRead), rctx: rctx, rstop: stop,
		low: m.Checkpoint, written: m.Checkpoint, lastRec: m.Checkpoint, readEnd: m.Checkpoint, contact: time.Now(),
		kick: make(chan struct{}, 1), quit: make(chan struct{})}
	d.wg.Add(1)
	go d.flushLoop()
	return d, nil
}

func positionAt(seq uint64) manifest.Position { return manifest.Position{SeqNum: seq} }

func (d *daemonMember) Epoch() uint64 { return d.m.Epoch }

func (d *daemonMember) Checkpoint() (acked, written uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.low, d.written
}

func (d *daemonMember) fencedErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fenced
}

// Next returns the next records, waiting at the tail while following. Tail is unknown
// (math.MaxUint64) until a read that does not follow ends at the tail: that batch is empty,
// with NextSeq and Tail at the tail.
func (d *daemonMember) Next(ctx context.Context) (consumer.ReadBatch, error) {
	if err := d.fencedErr(); err != nil {
		return consumer.ReadBatch{}, err
	}
	recs, err := d.read.next(d.rctx)
	if ferr := d.fencedErr(); ferr != nil {
		return consumer.ReadBatch{}, ferr
	}
	end := d.readEnd
	if d.read.resume != nil {
		end = *d.read.resume
	}
	d.mu.Lock()
	d.readEnd = max(d.readEnd, end)
	if len(recs) > 0 {
		d.lastRec = recs[len(recs)-1].SeqNum + 1
	} else if d.low >= d.lastRec {
		d.advanceLocked(d.readEnd) // records skipped after the last delivered one
	}
	d.mu.Unlock()
	switch {
	case errors.Is(err, consumer.ErrDone) && !d.follow:
		return consumer.ReadBatch{NextSeq: end, Tail: positionAt(end)}, nil
	case err != nil && ctx.Err() != nil:
		return consumer.ReadBatch{}, ctx.Err()
	case err != nil:
		return consumer.ReadBatch{}, err
	}
	return consumer.ReadBatch{Records: recs, NextSeq: end, Tail: positionAt(math.MaxUint64)}, nil
}

// Poll is Next: a read that does not follow ends at the tail by itself.
func (d *daemonMember) Poll(ctx context.Context) (consumer.ReadBatch, error) { return d.Next(ctx) }

// AckThrough acknowledges the delivered records up to seq, and with the last delivered one
// the records the read skipped after it (command records without --include-commands).
func (d *daemonMember) AckThrough(seq uint64) error {
	d.mu.Lock()
	if d.fenced != nil {
		defer d.mu.Unlock()
		return d.fenced
	}
	if seq >= d.lastRec {
		d.mu.Unlock()
		return fmt.Errorf("%w: seq_num %d (delivered up to %d)", consumer.ErrNotDelivered, seq, d.lastRec)
	}
	to := seq + 1
	if to == d.lastRec {
		to = d.readEnd
	}
	d.advanceLocked(to)
	full := d.low-d.written >= d.ackRecords
	d.mu.Unlock()
	if full {
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

func (d *daemonMember) advanceLocked(to uint64) {
	if to <= d.low {
		return
	}
	d.low = to
	if d.pendingAt.IsZero() {
		d.pendingAt = time.Now()
	}
}

// Check asks the daemon whether the member still holds the group (an ack that moves
// nothing).
func (d *daemonMember) Check(ctx context.Context) error {
	if err := d.fencedErr(); err != nil {
		return err
	}
	d.mu.Lock()
	written := d.written
	d.mu.Unlock()
	return d.write(ctx, written)
}

// flush writes the pending acknowledgements.
func (d *daemonMember) flush(ctx context.Context) error {
	d.mu.Lock()
	low, written, fenced := d.low, d.written, d.fenced
	d.mu.Unlock()
	if fenced != nil {
		return fenced
	}
	if low <= written {
		return nil
	}
	return d.write(ctx, low)
}

// write sends the checkpoint cp with the ack route and records the answer; a refusal
// that says the member lost its group is sticky and ends the read.
func (d *daemonMember) write(ctx context.Context, cp uint64) error {
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	got, err := d.b.ackGroup(ctx, d.name, d.m, cp)
	if err == nil {
		d.mu.Lock()
		d.written = max(d.written, got)
		d.contact = time.Now()
		if d.low <= d.written {
			d.pendingAt = time.Time{}
		}
		d.mu.Unlock()
		return nil
	}
	var lost error
	if fe, ok := fencedFrom(err); ok {
		lost = fe
	} else if daemonCode(err) == s2api.CodeStreamNotFound {
		lost = d.b.streamErr(d.name, err) // deleted (perhaps created again) since the join
	} else {
		return d.b.groupErr(d.name, d.m.Group, err)
	}
	d.mu.Lock()
	if d.fenced == nil {
		d.fenced = lost
		d.b.log.Warn("fenced by a newer group member", "group", d.m.Group, "epoch", d.m.Epoch, "error", lost)
	}
	lost = d.fenced
	d.mu.Unlock()
	d.rstop(lost)
	return lost
}

// checkEvery is how often an idle member asks whether it still holds its group, as a
// library member following the tail learns it from the manifest it polls.
func (d *daemonMember) checkEvery() time.Duration { return max(d.ackInterval, time.Second) }

// flushLoop writes pending acknowledgements ackInterval after the first of them, or when
// kicked, and checks the membership while idle, until Close.
func (d *daemonMember) flushLoop() {
	defer d.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-d.quit
		cancel()
	}()
	step := max(d.ackInterval/4, time.Millisecond)
	tick := time.NewTicker(step)
	defer tick.Stop()
	for {
		kicked := false
		select {
		case <-d.quit:
			return
		case <-d.kick:
			kicked = true
		case <-tick.C:
		}
		d.mu.Lock()
		// At the last tick before ackInterval has passed: the next one may come after.
		due := kicked || !d.pendingAt.IsZero() && time.Since(d.pendingAt) >= d.ackInterval-step
		idle := time.Since(d.contact) >= d.checkEvery()
		written, fenced := d.written, d.fenced
		d.mu.Unlock()
		if fenced != nil {
			return
		}
		var err error
		switch {
		case due:
			err = d.flush(ctx)
		case idle:
			err = d.write(ctx, written)
		default:
			continue
		}
		if err != nil && ctx.Err() == nil {
			var fe *consumer.FencedError
			if errors.As(err, &fe) || d.fencedErr() != nil {
				return
			}
			d.mu.Lock()
			d.contact = time.Now() // do not retry a failing check at every tick
			d.mu.Unlock()
			d.b.log.Warn("checkpoint write failed; retrying", "group", d.m.Group, "error", err)
		}
	}
}

// Close writes the pending acknowledgements (unless fenced), stops the writer and ends the
// read. It returns the final write's error.
func (d *daemonMember) Close(ctx context.Context) error {
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.quit)
	d.wg.Wait()
	err := d.flush(ctx)
	d.rstop(consumer.ErrClosed)
	d.read.close()
	return err
}
