package producer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
)

// Append validates in at once (S2's limits and record rules, and the stream's
// timestamping mode as last read), waits for buffer space (MaxBufferedInputs appends and
// MaxInFlightBytes metered bytes not yet resolved) within ctx, and adds it to the open
// batch. The ticket resolves after the manifest write that commits it. Append takes
// ownership of in's records: their bytes must not change until the ticket resolves.
func (p *Producer) Append(ctx context.Context, in batchfmt.AppendInput, opts ...AppendOption) (*Ticket, error) {
	var o appendOptions
	for _, opt := range opts {
		opt(&o)
	}
	if p.cfg.DeliveryTimeout <= 0 {
		o.since = time.Time{}
	}
	c := o.chain
	if c != nil && c.last != nil && c.lastP != p {
		if testHookChainMove != nil {
			testHookChainMove()
		}
		wctx, cancel := p.acceptWithin(ctx, o.since)
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
	t, err := p.append(ctx, in, o)
	if err == nil && c != nil {
		c.last, c.lastP = t, p
	}
	return t, err
}

// AppendSync is Append that waits for the outcome. If ctx ends first it returns ctx's error;
// the append may still be committed.
func (p *Producer) AppendSync(ctx context.Context, in batchfmt.AppendInput, opts ...AppendOption) (Ack, error) {
	t, err := p.Append(ctx, in, opts...)
	if err != nil {
		return Ack{}, err
	}
	return t.Wait(ctx)
}

// acceptWithin bounds ctx by when an append received at since must be accepted: half of
// DeliveryTimeout after since (ctx as it is for a zero since). The bound, not ctx, ended a
// wait if ctx has no error and the bounded context's is context.DeadlineExceeded.
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

// requiresTimestamps reports whether the stream's timestamping mode is client-require, so
// that a record without a timestamp is refused at once. The mode last read may be stale:
// before refusing, it is read again (a failed read keeps it; the commit checks either way).
func (p *Producer) requiresTimestamps(ctx context.Context) bool {
	if manifest.TimestampingMode(p.tsMode.Load()) != manifest.ClientRequire {
		return false
	}
	if snap, err := manifest.Open(p.store, p.cfg.Stream.ManifestKey()).Load(ctx); err == nil {
		p.tsMode.Store(uint32(snap.State.Config.Timestamping.Mode))
	}
	return manifest.TimestampingMode(p.tsMode.Load()) == manifest.ClientRequire
}

// append validates in, reserves its buffer space and adds a copy of it to the open batch.
func (p *Producer) append(ctx context.Context, in batchfmt.AppendInput, o appendOptions) (*Ticket, error) {
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
	actx, cancel := p.acceptWithin(ctx, o.since)
	err := p.waitRoom(actx, metered, o.draining, true)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return nil, p.notAccepted("no buffer space")
		}
		return nil, err
	}
	t := &Ticket{done: make(chan struct{}), records: len(own.Records), metered: metered, start: time.Now(), chain: o.chain}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.admitLocked(o); err != nil {
		p.releaseLocked(1, metered)
		return nil, err
	}
	var preWait time.Duration
	if !o.since.IsZero() {
		preWait = max(time.Since(o.since), 0)
	}
	if err := p.addLocked(own, t, preWait); err != nil {
		p.releaseLocked(1, metered)
		return nil, err
	}
	return t, nil
}

// admitLocked refuses an append that may not join the open batch now: the producer is
// closing or failed, Submit's records were accepted before an expiry, or the append waited
// past half its delivery timeout.
func (p *Producer) admitLocked(o appendOptions) error {
	switch {
	case p.fatal != nil:
		return p.fatal
	case p.closing && !o.draining:
		return ErrClosed
	case o.epoch != nil && *o.epoch != p.expiries:
		return errSubmittedBeforeExpiry
	}
	if !o.since.IsZero() {
		if w := max(time.Since(o.since), 0); w > p.cfg.DeliveryTimeout/2 {
			return p.notAccepted(fmt.Sprintf("it waited %v", w.Round(time.Millisecond)))
		}
	}
	return nil
}

// addLocked adds an append to the open batch, opening one if there is none, and seals it
// when it is full or FlushInterval is FlushEveryAppend.
func (p *Producer) addLocked(in *batchfmt.AppendInput, t *Ticket, preWait time.Duration) error {
	b := p.open
	if b == nil {
		b = &batch{num: p.nextNum, state: stateOpen, enc: p.encoderLocked(), opened: time.Now()}
		p.nextNum++
		p.open = b
		p.kick.wake(p.kick.linger)
	}
	if b.enc.Add(in) < 0 {
		// Cannot happen after Validate; rebuild the encoder so the batch stays usable.
		err := b.enc.Err()
		b.enc = batchfmt.NewEncoder(p.cfg.BatchCompression)
		for _, a := range b.appends {
			b.enc.Add(a)
		}
		if len(b.appends) == 0 {
			// Leave no empty batch, and no gap in the batch numbers, behind.
			p.open = nil
			p.nextNum--
		}
		return fmt.Errorf("producer: %w", err)
	}
	b.appends = append(b.appends, in)
	b.tickets = append(b.tickets, t)
	b.chained = b.chained || t.chain != nil
	b.metered += t.metered
	b.preWait = max(b.preWait, preWait)
	if p.cfg.FlushInterval == FlushEveryAppend || b.enc.EncodedSize() >= p.cfg.FlushSizeBytes {
		p.sealLocked()
	}
	return nil
}
