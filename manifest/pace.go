package manifest

import (
	"context"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// Pacer spaces one writer's writes of one manifest to the store's per-key write limit
// (objectstore.KeyWritesPerSecond: about one a second on Google Cloud Storage, fifteen on
// S3). A writer calls Wait before it gathers what to write, so that what arrives during the
// wait joins the same write (group commit absorbs the pacing), and Wrote as each write
// attempt starts. A store with no stated limit gives a Pacer that never waits. Not safe for
// concurrent use: each writer loop owns its own.
type Pacer struct {
	interval time.Duration
	next     time.Time
	now      func() time.Time
}

// NewPacer paces writes to store's limit; now is the writer's clock (nil: time.Now).
func NewPacer(store objectstore.Store, now func() time.Time) *Pacer {
	if now == nil {
		now = time.Now
	}
	p := &Pacer{now: now}
	if limit := objectstore.KeyWritesPerSecond(store); limit > 0 {
		p.interval = time.Duration(float64(time.Second) / limit)
	}
	return p
}

// Interval is the least time between two writes (0: no pacing).
func (p *Pacer) Interval() time.Duration { return p.interval }

// Wait returns once the next write may start, or with ctx's error.
func (p *Pacer) Wait(ctx context.Context) error {
	if p.interval == 0 {
		return nil
	}
	d := p.next.Sub(p.now())
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wrote records that a write attempt starts now.
func (p *Pacer) Wrote() {
	if p.interval > 0 {
		p.next = p.now().Add(p.interval)
	}
}
