package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
)

// Append appends in to a stream through the stream's shared producer and waits for its ack.
func (e *Engine) Append(ctx context.Context, basin, name string, in batchfmt.AppendInput) (producer.Ack, error) {
	arrived := time.Now()
	for attempt := 0; ; attempt++ {
		op, err := e.acquireFor(ctx, basin, name, arrived)
		if err != nil {
			return producer.Ack{}, err
		}
		var ack producer.Ack
		t, err := op.p.Append(ctx, in, producer.ReceivedAt(arrived))
		if err == nil {
			ack, err = t.Wait(ctx)
		}
		e.release(op)
		if err != nil && attempt == 0 && (errors.Is(err, manifest.ErrGenerationChanged) || errors.Is(err, producer.ErrClosed)) {
			// The stream was deleted and created again under this producer, or the producer
			// was closed for idleness meanwhile: open a fresh one and try once more.
			e.evict(basin, name, op)
			continue
		}
		if errors.Is(err, manifest.ErrNotExist) || op.p.Err() != nil {
			e.evict(basin, name, op) // gone, or failed for good: the next append opens afresh
		}
		if err == nil {
			e.committed(op, ack)
		}
		return ack, err
	}
}

// AppendAsync hands in to the stream's shared producer without waiting for its commit, and
// returns a function that waits for its ack (call it exactly once; a wait whose ctx ends
// first returns ctx's error, and the append still commits or fails on its own). Inputs that
// one goroutine hands over one after another with one chain commit in that order, each only
// if none before it failed (producer.Chain): an append session can have many in flight, the
// producer batches them into few commits, and nothing after a failure enters the stream. The
// error returned at once is one of handing over: no such stream, an invalid input, a closed
// engine, an earlier failure of the chain, the delivery timeout (producer.ErrDeliveryTimeout)
// when opening the stream's producer, or waiting to be handed to it, took too long
// (producer.ReceivedAt). An error from the wait is final for this input:
// unlike Append, it is not retried on a fresh producer, which could reorder it after inputs
// handed over since. Order holds across producers too: if the stream's producer is replaced
// while earlier inputs are still pending on it (the stream deleted and created again), the
// chain's next input waits for them on the new producer (producer.WithChain) and fails
// if one of them does.
func (e *Engine) AppendAsync(ctx context.Context, basin, name string, in batchfmt.AppendInput, chain *producer.Chain) (wait func(context.Context) (producer.Ack, error), err error) {
	arrived := time.Now()
	for attempt := 0; ; attempt++ {
		op, err := e.acquireFor(ctx, basin, name, arrived)
		if err != nil {
			return nil, err
		}
		t, err := op.p.Append(ctx, in, producer.WithChain(chain), producer.ReceivedAt(arrived))
		if err != nil {
			e.release(op)
			if attempt == 0 && (errors.Is(err, manifest.ErrGenerationChanged) || errors.Is(err, producer.ErrClosed)) {
				// Once more on a fresh producer, which first waits for the chain's appends
				// still pending on this one (and refuses this one if any of them fails).
				e.evict(basin, name, op)
				continue
			}
			if errors.Is(err, manifest.ErrNotExist) || op.p.Err() != nil {
				e.evict(basin, name, op)
			}
			return nil, err
		}
		return func(wctx context.Context) (producer.Ack, error) {
			ack, err := t.Wait(wctx)
			select {
			case <-t.Done():
				e.settle(basin, name, op, ack, err)
			default:
				// wctx ended first: the producer is in use until the ticket resolves.
				go func() {
					<-t.Done()
					tack, terr := t.Result()
					e.settle(basin, name, op, tack, terr)
				}()
			}
			return ack, err
		}, nil
	}
}

// acquireFor is acquire for an append that arrived at arrived: with a delivery timeout,
// opening the stream's producer must end within it, counted from the append's arrival (an
// append retried on a fresh producer keeps its first arrival), or the append fails with
// producer.ErrDeliveryTimeout, nothing of it written. The producer's own open is bounded by
// the timeout from its start as well. The time the append then waits to be accepted also
// counts (producer.ReceivedAt): a client that gives up on an append some time
// after sending it must have been told of its failure by then.
func (e *Engine) acquireFor(ctx context.Context, basin, name string, arrived time.Time) (*openProducer, error) {
	d := e.cfg.Producer.DeliveryTimeout
	if d <= 0 {
		return e.acquire(ctx, basin, name)
	}
	actx, cancel := context.WithDeadline(ctx, arrived.Add(d))
	defer cancel()
	op, err := e.acquire(actx, basin, name)
	if err != nil && ctx.Err() == nil && actx.Err() != nil && !errors.Is(err, producer.ErrDeliveryTimeout) {
		err = fmt.Errorf("%w: the stream's producer did not open within %v of the append's arrival: %w", producer.ErrDeliveryTimeout, d, err)
	}
	return op, err
}

// settle ends an AppendAsync's use of op once its ticket has resolved with err.
func (e *Engine) settle(basin, name string, op *openProducer, ack producer.Ack, err error) {
	e.release(op)
	switch {
	case err == nil:
		e.committed(op, ack)
	case errors.Is(err, manifest.ErrGenerationChanged), errors.Is(err, producer.ErrClosed), errors.Is(err, manifest.ErrNotExist), op.p.Err() != nil:
		e.evict(basin, name, op) // the next append opens a fresh producer
	}
}

// committed tells the stream's followers in this engine that an append committed: the
// stream's watcher, if it holds an older tail, polls at once for all of them.
func (e *Engine) committed(op *openProducer, ack producer.Ack) {
	e.watch.PublishTail(e.cfg.Store, op.st.ManifestKey(), ack.Tail.SeqNum)
}
