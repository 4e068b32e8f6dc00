package producer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
)

// RecordAck acknowledges one submitted record: its seq_num and the ack of the append
// (client-side batch) that carried it.
type RecordAck struct {
	SeqNum uint64
	Batch  Ack
}

// RecordTicket resolves when the record's batch has resolved.
type RecordTicket struct {
	ready chan struct{} // closed once the fields below are set; shared (see submitter.ready)
	t     *Ticket
	index int
	err   error
	epoch uint64 // Producer.expiries when submitted
}

// Wait waits for the record's outcome or for ctx.
func (r *RecordTicket) Wait(ctx context.Context) (RecordAck, error) {
	select {
	case <-r.ready:
	case <-ctx.Done():
		return RecordAck{}, ctx.Err()
	}
	if r.err != nil {
		return RecordAck{}, r.err
	}
	ack, err := r.t.Wait(ctx)
	if err != nil {
		return RecordAck{}, err
	}
	return RecordAck{SeqNum: ack.Start.SeqNum + uint64(r.index), Batch: ack}, nil
}

// submitter batches single records into appends with batchfmt.Batcher (linger, records,
// bytes) and appends them.
type submitter struct {
	p       *Producer
	mu      sync.Mutex
	b       *batchfmt.Batcher
	waiting []*RecordTicket // records in the batcher, in order
	kick    chan struct{}
	// ready is the channel of the last records added, those of the open client-side batch
	// accepted in one epoch: they resolve together, so they share it rather than each
	// allocate its own. Tickets that share a channel are adjacent in waiting.
	ready chan struct{}
	epoch uint64
}

func (s *submitter) init(p *Producer, cfg batchfmt.BatchingConfig) error {
	b, err := batchfmt.NewBatcher(cfg)
	if err != nil {
		return fmt.Errorf("%w: batching: %w", ErrInvalidConfig, err)
	}
	s.p, s.b, s.kick = p, b, make(chan struct{}, 1)
	return nil
}

// Submit adds one record to the client-side batch (see Config.Batching). The record is
// validated at once; the batch is appended when full or when its linger passes, and
// Submit blocks under backpressure when it completes a batch. The returned ticket gives the
// record's seq_num and its batch's ack. Records submitted together may share an append
// with no condition; use Append for match_seq_num or fencing tokens. Submit takes ownership
// of the record's byte slices until its ticket resolves.
//
// A record waits up to the linger (5 ms by default) in the client-side batch, and its append
// then up to Config.FlushInterval (100 ms by default) in the open batch object: with the
// defaults, a lone record's ticket resolves some 105 ms after Submit plus the upload and
// the commit. Lower FlushInterval (FlushEveryAppend flushes every append at once) for lower
// latency at the cost of more, smaller objects; call Flush to send what is buffered now.
func (p *Producer) Submit(ctx context.Context, rec batchfmt.Record) (*RecordTicket, error) {
	s := &p.sub
	s.mu.Lock()
	defer s.mu.Unlock()
	p.mu.Lock()
	closing, fatal := p.closing, p.fatal
	p.mu.Unlock()
	if fatal != nil {
		return nil, fatal
	}
	if closing {
		return nil, ErrClosed
	}
	if err := rec.Validate(); err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	if !rec.HasTimestamp && p.requiresTimestamps(ctx) {
		return nil, fmt.Errorf("producer: %w", manifest.ErrTimestampRequired)
	}
	// Wait for room for the batch this record may complete before adding it, so that the
	// append below does not block on ctx: a batch holds other callers' records, whose
	// tickets must not fail because this caller's ctx ended.
	if err := p.waitRoom(ctx, int64(s.b.MeteredBytes()+rec.MeteredSize()), false, false); err != nil {
		return nil, err
	}
	// The record is accepted now: an expiry before this (while Submit waited for room) is
	// not one it was accepted before.
	p.mu.Lock()
	epoch := p.expiries
	p.mu.Unlock()
	before := s.b.Len()
	out, err := s.b.Add(rec)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	// rec joined the open batch unless there was none or Add completed it first (out[0]
	// then holds only the records before rec).
	joined := before > 0 && (len(out) == 0 || len(out[0].Records) == before+1)
	if !joined || epoch != s.epoch {
		s.ready, s.epoch = make(chan struct{}), epoch
	}
	rt := &RecordTicket{ready: s.ready, epoch: epoch}
	s.waiting = append(s.waiting, rt)
	for _, in := range out {
		s.emitLocked(p.ctx, in, false)
	}
	if s.b.Len() > 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return rt, nil
}

// emitLocked appends one completed batch and hands its ticket to the records' tickets.
// Records submitted before DeliveryTimeout last failed batches (a prefix: epochs only grow),
// or before it fails batches while the append waits for buffer space, fail with it instead,
// so that none commits after an append accepted before it failed.
func (s *submitter) emitLocked(ctx context.Context, in batchfmt.AppendInput, draining bool) {
	n := len(in.Records)
	s.p.mu.Lock()
	cur := s.p.expiries
	s.p.mu.Unlock()
	stale := 0
	for stale < n && s.waiting[stale].epoch != cur {
		stale++
	}
	if stale > 0 && (in.MatchSeqNum != nil || in.FencingToken != nil) {
		stale = n // an append with a condition is not split
	}
	for _, rt := range s.waiting[:stale] {
		rt.err = errSubmittedBeforeExpiry
	}
	wake(s.waiting[:stale])
	if stale < n {
		in.Records = in.Records[stale:]
		// append checks cur again once it has buffer space: an expiry while it waits fails
		// these records too.
		t, err := s.p.append(ctx, in, appendOptions{draining: draining, epoch: &cur})
		for i, rt := range s.waiting[stale:n] {
			rt.t, rt.index, rt.err = t, i, err
		}
		wake(s.waiting[stale:n])
	}
	s.waiting = s.waiting[n:]
}

// wake closes the channels of ts, whose outcomes are set. Tickets that share a channel are
// adjacent, and ts holds all of them (they are of one batch and one epoch).
func wake(ts []*RecordTicket) {
	for i, rt := range ts {
		if i == 0 || rt.ready != ts[i-1].ready {
			close(rt.ready)
		}
	}
}

// loop appends batches whose linger has passed.
func (s *submitter) loop() {
	s.p.timerLoop(s.kick, func() time.Duration {
		s.mu.Lock()
		defer s.mu.Unlock()
		if in, ok := s.b.Poll(); ok {
			s.emitLocked(s.p.ctx, in, false)
		}
		if d, ok := s.b.Deadline(); ok {
			return max(time.Until(d), time.Nanosecond)
		}
		return 0
	})
}

// flush appends the open client-side batch, if any.
func (s *submitter) flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() == 0 {
		return nil
	}
	if err := s.p.waitRoom(ctx, int64(s.b.MeteredBytes()), false, false); err != nil {
		return err
	}
	if in, ok := s.b.Flush(); ok {
		s.emitLocked(s.p.ctx, in, false)
	}
	return nil
}

// abort fails the records still waiting in the batcher.
func (s *submitter) abort(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Flush()
	for _, rt := range s.waiting {
		rt.err = err
	}
	wake(s.waiting)
	s.waiting = nil
}
