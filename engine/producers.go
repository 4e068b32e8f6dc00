package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// openProducer is the engine's producer of one stream being appended to: opened on the
// first append, closed after IdleTimeout without appends, on deletion and on Close.
type openProducer struct {
	p        *producer.Producer
	st       stream.Stream
	lastUsed time.Time
	inFlight int
}

// closeIdle closes producers idle for longer than IdleTimeout, until Close.
func (e *Engine) closeIdle() {
	defer e.janitor.Done()
	t := time.NewTicker(max(e.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-e.quit:
			return
		case <-t.C:
		}
		now := e.cfg.Now()
		var idle []*openProducer
		e.mu.Lock()
		for k, op := range e.producers {
			if op.inFlight == 0 && now.Sub(op.lastUsed) >= e.cfg.IdleTimeout {
				idle = append(idle, op)
				delete(e.producers, k)
			}
		}
		e.mu.Unlock()
		for _, op := range idle {
			e.closeProducer(op)
		}
	}
}

// closeAsyncLocked closes op in the background; Close waits for it. The caller holds e.mu
// and the engine is not closed: Close sets closed under e.mu before it waits, so it counts
// every close started before that.
func (e *Engine) closeAsyncLocked(op *openProducer) {
	e.closers.Add(1)
	go func() {
		defer e.closers.Done()
		e.closeProducer(op)
	}()
}

// closeProducer closes op in the background path: with its own timeout, logging a failure.
func (e *Engine) closeProducer(op *openProducer) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.stopProducer(ctx, op); err != nil {
		e.cfg.Logger.Warn("closing producer", slog.String("stream", op.st.Name()), slog.Any("err", err))
	}
}

// stopProducer closes op's producer (draining it within ctx) and counts it as closed.
func (e *Engine) stopProducer(ctx context.Context, op *openProducer) error {
	err := op.p.Close(ctx)
	e.metrics.openProducers.Dec()
	return err
}

// acquire returns the stream's producer, opening it if needed, and marks it in use.
func (e *Engine) acquire(ctx context.Context, basin, name string) (*openProducer, error) {
	key := streamKey{basin, name}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if op, ok := e.producers[key]; ok {
		op.inFlight++
		op.lastUsed = e.cfg.Now()
		e.mu.Unlock()
		return op, nil
	}
	e.mu.Unlock()

	st, err := stream.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	p, err := producer.New(ctx, e.cfg.producerConfig(st))
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			if berr := e.requireBasin(ctx, basin); berr != nil {
				return nil, berr
			}
		}
		return nil, err
	}
	e.metrics.openProducers.Inc() // every producer opened is closed through stopProducer
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.closeProducer(&openProducer{p: p, st: st}) // now: Close may be waiting already
		return nil, ErrClosed
	}
	defer e.mu.Unlock()
	if op, ok := e.producers[key]; ok { // another request won the race
		e.closeAsyncLocked(&openProducer{p: p, st: st})
		op.inFlight++
		op.lastUsed = e.cfg.Now()
		return op, nil
	}
	op := &openProducer{p: p, st: st, lastUsed: e.cfg.Now(), inFlight: 1}
	e.producers[key] = op
	return op, nil
}

func (e *Engine) release(op *openProducer) {
	e.mu.Lock()
	op.inFlight--
	op.lastUsed = e.cfg.Now()
	e.mu.Unlock()
}

// evict drops op from the cache (if it is still the cached one) and closes it.
func (e *Engine) evict(basin, name string, op *openProducer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur, ok := e.producers[streamKey{basin, name}]; ok && cur == op {
		delete(e.producers, streamKey{basin, name})
		e.closeAsyncLocked(op)
	}
}
