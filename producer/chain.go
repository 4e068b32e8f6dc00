package producer

import (
	"context"
	"sync/atomic"
)

// Chain links an ordered run of appends that one goroutine hands over one after another
// (WithChain), such as an S2 append session's: each commits only if none before it in the
// chain failed. Once one fails, every later one fails with manifest.ErrPrecedingAppendFailed
// and nothing of it enters the stream, so a client that resends what a failed session left
// unacknowledged never writes a record twice (except after ErrOutcomeUnknown). An append
// Append refuses at once is not part of the chain. The zero value is ready to use.
//
// A chain may move to another producer (the stream's was replaced): Append on the new one
// first waits until the appends handed to the old one have resolved.
type Chain struct {
	failed atomic.Bool
	// The first failure's producer and batch number (guarded by that producer's mu): a batch
	// committed after a later batch failed still applies the chain's appends.
	failP   *Producer
	failNum uint64
	last    *Ticket   // the last append handed over (the submitting goroutine's)
	lastP   *Producer // the producer it was handed to
}

// testHookChainMove, if set, is called when Append waits for a chain's appends on another
// producer.
var testHookChainMove func()

// Failed reports whether an append of the chain has failed (false for a nil chain).
func (c *Chain) Failed() bool { return c != nil && c.failed.Load() }

// Wait waits until the last append handed over has resolved (or ctx ends).
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

// failedBeforeLocked reports whether an append of c failed in a batch of p before batch num,
// or on another producer; p.mu is held.
func (c *Chain) failedBeforeLocked(p *Producer, num uint64) bool {
	return c != nil && c.failed.Load() && (c.failP != p || c.failNum < num)
}

// failLocked records a failure of an append of c in batch num of p; p.mu is held.
func (c *Chain) failLocked(p *Producer, num uint64) {
	if !c.failed.Load() || (c.failP == p && num < c.failNum) {
		c.failP, c.failNum = p, num
	}
	c.failed.Store(true)
}
