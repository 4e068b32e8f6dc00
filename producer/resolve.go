package producer

import (
	"time"

	"github.com/sluice-dev/sluice/manifest"
)

// resolveLocked resolves b's tickets with results (nil: all fail with err), frees their
// buffer space and takes b out of pending.
func (p *Producer) resolveLocked(b *batch, results []manifest.AppendResult, tail Position, err error) {
	b.to(stateResolved)
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
		if t.err != nil && t.chain != nil {
			t.chain.failLocked(p, b.num)
		}
		close(t.done)
	}
	p.releaseLocked(len(b.tickets), b.metered)
	for i, x := range p.pending {
		if x == b {
			if i == 0 {
				p.pending[0] = nil
				p.pending = p.pending[1:]
			} else {
				p.pending = append(p.pending[:i:i], p.pending[i+1:]...)
			}
			break
		}
	}
	close(p.progress)
	p.progress = make(chan struct{})
}

// failAllLocked makes err the producer's failure: it refuses new appends, and every pending
// ticket fails with err (joined with ErrOutcomeUnknown where a write holding it was sent). Only the commit loop calls it, when no write of it is in flight.
func (p *Producer) failAllLocked(err error) {
	p.setFatalLocked(err)
	p.sealLocked()
	for len(p.pending) > 0 {
		b := p.pending[0]
		p.resolveLocked(b, nil, Position{}, b.outcome(err))
	}
	p.toUpload = nil
}

// failUnwrittenLocked is failAllLocked from outside the commit loop (an uploader): the batches
// a manifest write may have committed are left to the commit loop, the rest fail with err.
func (p *Producer) failUnwrittenLocked(err error) {
	p.setFatalLocked(err)
	p.sealLocked()
	p.dropFromLocked(p.unwrittenLocked(), func(*batch) error { return err })
}

func (p *Producer) setFatalLocked(err error) {
	if p.fatal == nil {
		p.fatal = err
		p.log.Error("producer failed", "err", err)
	}
}

// unwrittenLocked returns the index of the oldest pending batch that no manifest write may
// have committed. The commit loop takes batches as a prefix of pending, so it and every batch
// after it are not in the stream; the batches before it are the commit loop's to resolve.
func (p *Producer) unwrittenLocked() int {
	i := 0
	for i < len(p.pending) && p.pending[i].mayBeCommitted() {
		i++
	}
	return i
}

// dropFromLocked fails the appends of pending[i:] and of the open batch, each batch with
// errOf(it). Uploaders and the commit loop leave resolved batches alone. It returns how many
// batches and appends it failed.
func (p *Producer) dropFromLocked(i int, errOf func(*batch) error) (batches, appends int) {
	dropped := append([]*batch(nil), p.pending[i:]...)
	if p.open != nil {
		dropped = append(dropped, p.open)
		p.open = nil
	}
	for _, b := range dropped {
		appends += len(b.tickets)
		p.resolveLocked(b, nil, Position{}, errOf(b))
	}
	kept := p.toUpload[:0]
	for _, b := range p.toUpload {
		if b.state != stateResolved {
			kept = append(kept, b)
		}
	}
	clear(p.toUpload[len(kept):])
	p.toUpload = kept
	return len(dropped), appends
}
