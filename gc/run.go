package gc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// StreamLister returns the streams Run collects in one round (for the daemon: every stream
// of the store, from package catalog).
type StreamLister func(ctx context.Context) ([]stream.Stream, error)

// Runner runs rounds of passes every Config.Interval until Close.
type Runner struct {
	c      *Collector
	list   StreamLister
	cancel context.CancelFunc
	kick   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// Run starts collecting the streams list returns, one round at once and then one every
// cfg.Interval, in a goroutine that Close stops. A round passes over every stream in turn;
// errors are logged, counted and reported to cfg.OnPass, and the stream is tried again next
// round. ctx bounds the whole run.
func Run(ctx context.Context, store objectstore.Store, cfg Config, list StreamLister) (*Runner, error) {
	if list == nil {
		return nil, fmt.Errorf("%w: stream lister is nil", ErrInvalidConfig)
	}
	c, err := NewCollector(store, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Runner{c: c, list: list, cancel: cancel, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go r.loop(ctx)
	return r, nil
}

// Collector returns the runner's collector.
func (r *Runner) Collector() *Collector { return r.c }

// Trigger asks for a round now (it is merged with a pending request).
func (r *Runner) Trigger() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Close stops the runner, interrupting a round in progress, and waits for it.
func (r *Runner) Close() error {
	r.once.Do(r.cancel)
	<-r.done
	return nil
}

func (r *Runner) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		r.round(ctx)
		t.Reset(r.c.cfg.Interval)
	}
}

func (r *Runner) round(ctx context.Context) {
	streams, err := r.list(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.c.m.passErrors.Inc()
			r.c.cfg.Logger.Warn("gc: listing streams failed; retrying next round", "err", err)
		}
		return
	}
	old, journals := r.c.startJournalRound(ctx, streams)
	defer r.c.finishJournalRound(ctx, old, journals)
	for _, s := range streams {
		if ctx.Err() != nil {
			return
		}
		rep, err := r.c.Pass(ctx, s)
		if errors.Is(err, ErrStreamNotFound) {
			r.c.Forget(s)
		} else if err != nil && ctx.Err() == nil {
			if journals != nil {
				journals.fail() // its references are unknown: no window goes this round
			}
			r.c.cfg.Logger.Warn("gc pass failed; retrying next round", "stream", s, "err", err)
		}
		if r.c.cfg.OnPass != nil {
			r.c.cfg.OnPass(rep, err)
		}
	}
}
