package producer

import (
	"fmt"
	"time"
)

// expiryLoop applies DeliveryTimeout on a timer of its own, so that it holds while uploads
// or manifest writes hang.
func (p *Producer) expiryLoop() {
	p.timerLoop(p.kick.expiry, func() time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		if next := p.expireLocked(time.Now()); !next.IsZero() {
			return max(time.Until(next), time.Nanosecond)
		}
		return 0
	})
}

// expireLocked applies DeliveryTimeout at now. It finds the oldest pending batch past its
// deadline that no manifest write may have committed, and fails its appends with
// ErrDeliveryTimeout, with those of every batch after it and of the open batch (Submit's
// waiting records see p.expiries move and fail too): no append commits after one accepted
// before it failed so. Earlier batches are left to commit. It returns the earliest deadline
// of the batches left that a write may not have committed (zero if none).
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
	cause, within := p.expiryCauseLocked(first)
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

// expiryCauseLocked is the error b's appends fail with when DeliveryTimeout expires it, and
// how long after its flush that was.
func (p *Producer) expiryCauseLocked(b *batch) (cause error, within string) {
	timeout := p.cfg.DeliveryTimeout
	within = fmt.Sprint(timeout)
	if w := b.preWait.Round(time.Millisecond); w > 0 {
		within = fmt.Sprintf("%v of its flush (%v of the delivery timeout %v spent before an append of it was accepted)", timeout-w, w, timeout)
	}
	switch {
	case b.state == stateUploaded && p.commitErr != nil:
		cause = fmt.Errorf("%w: batch %d stored but not committed within %v: %w", ErrDeliveryTimeout, b.num, within, causeOf(p.commitErr))
	case b.state == stateUploaded:
		cause = fmt.Errorf("%w: batch %d stored but not committed within %v (no manifest write committed it in time)", ErrDeliveryTimeout, b.num, within)
	case b.lastErr != nil:
		cause = fmt.Errorf("%w: batch %d not stored within %v: %w", ErrDeliveryTimeout, b.num, within, causeOf(b.lastErr))
	default:
		cause = fmt.Errorf("%w: batch %d not stored within %v (no store request finished)", ErrDeliveryTimeout, b.num, within)
	}
	return cause, within
}
