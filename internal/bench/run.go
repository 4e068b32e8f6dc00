package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
)

// closeTimeout bounds the producers' final flush; after an interrupt, interruptTimeout does.
const (
	closeTimeout     = time.Minute
	interruptTimeout = 5 * time.Second
	deleteTimeout    = time.Minute
)

// paceQueue is how many due records a producer that falls behind its rate may have queued.
const paceQueue = 1024

// Run creates the target's stream, writes it with cfg.Producers producers for cfg.Duration
// while a reader follows it, waits for the last acks and for the reader to catch up, and
// deletes the stream again, also when ctx ends early or the run fails. When ctx ends early
// Run stops, cleans up and returns what it measured with Interrupted set. Any failed append
// or read ends the run with an error (after the cleanup).
func Run(ctx context.Context, t Target, cfg Config) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
		defer cancel()
		if derr := t.Delete(dctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("bench: deleting the stream: %w", derr))
		}
	}()
	if err := t.Create(ctx); err != nil {
		return nil, fmt.Errorf("bench: creating the stream: %w", err)
	}
	r := &run{cfg: cfg, t: t}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)
	return r.do(ctx)
}

// run is one Run in progress.
type run struct {
	cfg    Config
	t      Target
	ctx    context.Context // ends on interrupt or failure
	cancel context.CancelCauseFunc
	rec    recorder
	body   []byte

	failOnce sync.Once
	failErr  error
}

// fail ends the run with err (the first one counts).
func (r *run) fail(err error) {
	r.failOnce.Do(func() {
		r.failErr = err
		r.cancel(err)
	})
}

func (r *run) do(parent context.Context) (*Result, error) {
	req0, countsRequests := r.t.Requests(r.ctx)
	fol, err := r.t.Follow(r.ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: opening the reader: %w", err)
	}
	writers := make([]Writer, 0, r.cfg.Producers)
	closeAll := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(parent), interruptTimeout)
		defer cancel()
		for _, w := range writers {
			_ = w.Close(cctx)
		}
		fol.Close()
	}
	for i := range r.cfg.Producers {
		w, err := r.t.NewWriter(r.ctx, i)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("bench: opening producer %d: %w", i+1, err)
		}
		writers = append(writers, w)
	}
	r.body = make([]byte, r.cfg.RecordSize)
	for i := range r.body {
		r.body[i] = byte('a' + i%26)
	}

	r.rec.start = time.Now()
	sendCtx, stopSending := context.WithTimeout(r.ctx, r.cfg.Duration)
	defer stopSending()

	readCtx, stopReading := context.WithCancel(r.ctx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r.read(readCtx, fol)
	}()

	tickQuit, tickDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(tickDone)
		r.ticks(tickQuit)
	}()

	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.produce(sendCtx, parent, i, w)
		}()
	}
	wg.Wait()

	// The reader catches up with everything acknowledged, unless the run ended.
	deadline := time.Now().Add(r.cfg.DrainTimeout)
	for r.ctx.Err() == nil && time.Now().Before(deadline) {
		if acked, delivered := r.rec.counts(); delivered >= acked {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopReading()
	<-readDone
	fol.Close()
	close(tickQuit)
	<-tickDone
	if r.rec.pending() {
		r.rec.tick(time.Since(r.rec.start))
	}
	if r.failErr != nil {
		return nil, r.failErr
	}
	res := r.result()
	res.Interrupted = parent.Err() != nil
	if countsRequests {
		if req1, ok := r.t.Requests(context.WithoutCancel(parent)); ok {
			res.Requests, res.RequestsByPurpose = map[string]int64{}, map[string]int64{}
			for k, n := range req1 {
				if d := n - req0[k]; d > 0 {
					op, purpose := splitRequestKey(k)
					res.Requests[op] += d
					res.RequestsByPurpose[purpose] += d
				}
			}
		}
	}
	return res, nil
}

// ticks closes a window every second and reports progress, until quit.
func (r *run) ticks(quit <-chan struct{}) {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	for {
		select {
		case <-quit:
			if r.cfg.Progress != nil && r.cfg.ProgressOverwrite {
				fmt.Fprintln(r.cfg.Progress)
			}
			return
		case <-tk.C:
			p := r.rec.tick(time.Since(r.rec.start))
			if r.cfg.Progress != nil {
				acked, delivered := r.rec.counts()
				writeProgress(r.cfg.Progress, r.cfg.ProgressOverwrite, p, acked, delivered)
			}
		}
	}
}

// read delivers the follower's records to the recorder until ctx ends.
func (r *run) read(ctx context.Context, fol Follower) {
	var stamps []time.Duration
	for {
		hs, err := fol.Next(ctx)
		now := time.Since(r.rec.start)
		if err != nil {
			if ctx.Err() == nil {
				r.fail(fmt.Errorf("bench: reading: %w", err))
			}
			return
		}
		stamps = stamps[:0]
		for _, h := range hs {
			s, err := sentOf(h)
			if err != nil {
				r.fail(err)
				return
			}
			stamps = append(stamps, s)
		}
		r.rec.deliveredAt(now, stamps)
	}
}

// inflight is a sent append waiting for its ack.
type inflight struct {
	p      Pending
	stamps []time.Duration
	bytes  int
}

// produce runs producer i: it sends for the duration, then closes w and waits for the
// last acks.
func (r *run) produce(sendCtx, parent context.Context, i int, w Writer) {
	pend := make(chan inflight, 1<<14)
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		for f := range pend {
			at, err := f.p.Wait(context.WithoutCancel(r.ctx))
			if err != nil {
				if r.ctx.Err() == nil {
					r.fail(fmt.Errorf("bench: producer %d: append: %w", i+1, err))
				}
				continue
			}
			r.rec.acked(at, f.stamps, f.bytes)
		}
	}()
	// With no rate, sending stops when sendCtx ends; at a rate, once every record due
	// within the duration is sent (the pacer ends then), unless the run ends first.
	src := &source{r: r, batches: w.BatchesRecords()}
	ctx := sendCtx
	if r.cfg.Rate > 0 {
		ctx = r.ctx
		// A target that falls behind the rate keeps the run going at most a second (and
		// the records queued, up to paceQueue) past the duration.
		pctx, cancel := context.WithTimeout(r.ctx, r.cfg.Duration+time.Second)
		defer cancel()
		src.due = r.pace(pctx, i)
	}
	for ctx.Err() == nil {
		recs, stamps, bytes := src.next(ctx)
		if len(recs) == 0 {
			break
		}
		// The append itself is not cut short when the duration is up, only by an
		// interrupt or a failure.
		p, err := w.Send(r.ctx, recs)
		if err != nil {
			if r.ctx.Err() == nil {
				r.fail(fmt.Errorf("bench: producer %d: append: %w", i+1, err))
			}
			break
		}
		pend <- inflight{p: p, stamps: stamps, bytes: bytes}
	}
	timeout := closeTimeout
	if r.ctx.Err() != nil {
		timeout = interruptTimeout
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(parent), timeout)
	defer cancel()
	if err := w.Close(cctx); err != nil && r.ctx.Err() == nil {
		r.fail(fmt.Errorf("bench: producer %d: closing: %w", i+1, err))
	}
	close(pend)
	<-waited
}

// pace sends producer i's due times (since start) at its share of the rate until ctx ends.
func (r *run) pace(ctx context.Context, i int) <-chan time.Duration {
	out := make(chan time.Duration, paceQueue)
	n := float64(r.cfg.Producers)
	interval := time.Duration(float64(time.Second) * n / r.cfg.Rate)
	offset := time.Duration(float64(interval) * float64(i) / n)
	go func() {
		defer close(out)
		t := time.NewTimer(0)
		defer t.Stop()
		for k := int64(0); ; k++ {
			d := offset + time.Duration(k)*interval
			if d >= r.cfg.Duration {
				return
			}
			if wait := d - time.Since(r.rec.start); wait > 0 {
				t.Reset(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
			}
			select {
			case out <- d:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// source makes one producer's appends.
type source struct {
	r       *run
	batches bool                 // the writer batches single records itself
	due     <-chan time.Duration // due times at the rate; nil: none
	carry   []time.Duration      // a due time that did not fit the last append
}

// next returns the records of the next append, their send times and metered size: one
// record when the writer batches records itself, AppendSize records when set, else what has
// queued up (at least one; up to an append's limits). With no rate, records are made at
// once and sent now. It returns none when ctx ends first or the rate's records are all sent.
func (s *source) next(ctx context.Context) ([]batchfmt.Record, []time.Duration, int) {
	want, gather := s.r.cfg.AppendSize, false
	if want == 0 {
		if s.batches {
			want = 1
		} else {
			want, gather = batchfmt.MaxAppendRecords, true
		}
	}
	var recs []batchfmt.Record
	var stamps []time.Duration
	bytes := 0
	add := func(d time.Duration) bool {
		rec := batchfmt.Record{Headers: []batchfmt.Header{{Name: []byte(SentHeader), Value: sentValue(d)}}, Body: s.r.body}
		m := rec.MeteredSize()
		if len(recs) > 0 && bytes+m > batchfmt.MaxAppendBytes {
			return false
		}
		recs, stamps, bytes = append(recs, rec), append(stamps, d), bytes+m
		return true
	}
	if s.due == nil {
		now := time.Since(s.r.rec.start)
		for len(recs) < want && add(now) {
		}
		return recs, stamps, bytes
	}
	for _, d := range s.carry {
		add(d)
	}
	s.carry = s.carry[:0]
	for len(recs) < want {
		if gather && len(recs) > 0 {
			select {
			case d, ok := <-s.due:
				if !ok {
					return recs, stamps, bytes
				}
				if !add(d) {
					s.carry = append(s.carry, d)
					return recs, stamps, bytes
				}
				continue
			default:
				return recs, stamps, bytes
			}
		}
		select {
		case d, ok := <-s.due:
			if !ok {
				return recs, stamps, bytes // the duration is up: what is here is sent
			}
			add(d)
		case <-ctx.Done():
			return nil, nil, 0
		}
	}
	return recs, stamps, bytes
}
