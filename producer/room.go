package producer

import (
	"context"
	"fmt"
)

// room is the buffer space in use: appends accepted and not yet resolved, and their metered
// bytes (guarded by Producer.mu). freed is closed and replaced when space is released.
type room struct {
	inputs int
	bytes  int64
	freed  chan struct{}
}

func newRoom() room { return room{freed: make(chan struct{})} }

// waitRoom waits until one more append of n metered bytes fits, and reserves it if reserve
// is set. A lone append always fits (n never exceeds MaxInFlightBytes after validation).
// While full, it seals the open batch so that what is buffered is on its way.
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
		r := &p.room
		if r.inputs == 0 || (r.inputs < p.cfg.MaxBufferedInputs && r.bytes+n <= p.cfg.MaxInFlightBytes) {
			if reserve {
				r.inputs++
				r.bytes += n
			}
			p.mu.Unlock()
			return nil
		}
		p.sealLocked()
		ch := r.freed
		p.mu.Unlock()
		if err := ctx.Err(); err != nil {
			// Refuse now rather than race the wait against the room the seal may free.
			return fmt.Errorf("producer: waiting for buffer space: %w", err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("producer: waiting for buffer space: %w", ctx.Err())
		}
	}
}

// releaseLocked frees the space of inputs appends of bytes metered bytes.
func (p *Producer) releaseLocked(inputs int, bytes int64) {
	r := &p.room
	r.inputs -= inputs
	r.bytes -= bytes
	close(r.freed)
	r.freed = make(chan struct{})
}
