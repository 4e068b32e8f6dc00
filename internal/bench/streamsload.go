package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
)

// streamsBasin holds a row's streams.
const streamsBasin = "bench-streams"

// streamsRun is one RunStreams in progress.
type streamsRun struct {
	cfg    StreamsConfig
	client *http.Client
	api    string // the daemon's .../v1
	body   []byte // an append's JSON: one record of RecordBytes
	ops    opCounter
	mem    memSampler

	start             time.Time
	warmEnd, schedEnd time.Time // the measured window: [warmEnd, schedEnd)
	inFlight          atomic.Int64

	mu          sync.Mutex
	ack         Histogram // latencies (from due time) of the measured appends acked
	sec         Histogram // this second's, for progress
	secAcks     int64
	secFails    int64
	measured    int64 // appends due in the window
	acked       int64 // of those, acked
	ackedInWin  int64 // acks that arrived in the window, whatever their due time
	late        int64 // measured appends sent more than LateAfter after due
	failures    map[string]int64
	req0, req1  map[string]int64 // the store's counts at the window's start and end
	phase       string
	created     int
	measuredEnd bool
}

func newStreamsRun(cfg StreamsConfig) *streamsRun {
	r := &streamsRun{cfg: cfg, client: newClient(), failures: map[string]int64{}}
	r.ops.n = map[string]int64{}
	in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: bytes.Repeat([]byte("x"), cfg.RecordBytes)}}}
	r.body = s2api.EncodeAppendInputJSON(&in, s2api.FormatRaw)
	return r
}

// streamName is the i-th stream's name.
func streamName(i int) string { return fmt.Sprintf("s%06d", i) }

func (r *streamsRun) progressf(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "bench streams %d %s: %s\n", r.cfg.Streams, r.cfg.Mode, fmt.Sprintf(format, args...))
	}
}

// post sends one API call and returns the status and body.
func (r *streamsRun) post(ctx context.Context, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", r.api+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("S2-Basin", streamsBasin)
	res, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// create creates the basin and the streams, createParallelism at a time.
func (r *streamsRun) create(ctx context.Context) error {
	r.progressf("creating %d streams", r.cfg.Streams)
	if st, b, err := r.post(ctx, "/basins", fmt.Appendf(nil, `{"basin":%q}`, streamsBasin)); err != nil || st/100 != 2 {
		return fmt.Errorf("bench: creating basin: %w", errors.Join(err, statusErr(st, b)))
	}
	next := make(chan int)
	errc := make(chan error, createParallelism)
	var wg sync.WaitGroup
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range min(createParallelism, r.cfg.Streams) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				st, b, err := r.post(cctx, "/streams", fmt.Appendf(nil, `{"stream":%q}`, streamName(i)))
				if err == nil && st/100 != 2 {
					err = statusErr(st, b)
				}
				if err != nil {
					errc <- fmt.Errorf("bench: creating stream %s: %w", streamName(i), err)
					cancel()
					return
				}
				r.mu.Lock()
				r.created++
				r.mu.Unlock()
			}
		}()
	}
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
feed:
	for i := range r.cfg.Streams {
		select {
		case next <- i:
		case <-cctx.Done():
			break feed
		case <-tk.C:
			r.mu.Lock()
			n := r.created
			r.mu.Unlock()
			r.progressf("created %d of %d streams", n, r.cfg.Streams)
			select {
			case next <- i:
			case <-cctx.Done():
				break feed
			}
		}
	}
	close(next)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

// statusErr is the error of an answer with status st and body b; nil for a 2xx.
func statusErr(st int, b []byte) error {
	if st/100 == 2 || st == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", http.StatusText(st), s2api.DecodeErrorBody(st, b))
}

// load sends the appends on schedule and waits for the answers of all it sent.
func (r *streamsRun) load(ctx context.Context) {
	r.start = time.Now()
	r.warmEnd, r.schedEnd = r.start.Add(r.cfg.Warmup), r.start.Add(r.cfg.Warmup+r.cfg.Duration)
	monQuit, monDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(monDone)
		r.monitor(monQuit)
	}()
	sem := make(chan struct{}, r.cfg.MaxInFlight)
	var wg sync.WaitGroup
	schedCtx, cancel := context.WithDeadline(ctx, r.schedEnd)
	defer cancel()
	total, warm := r.cfg.Warmup+r.cfg.Duration, r.cfg.Warmup
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for k := 0; ; k++ {
		off := time.Duration(float64(k) * float64(time.Second) / r.cfg.Rate)
		if off >= total {
			break
		}
		due, measured := r.start.Add(off), off >= warm
		if d := time.Until(due); d > 0 {
			t.Reset(d)
			select {
			case <-t.C:
			case <-schedCtx.Done():
			}
		}
		select {
		case sem <- struct{}{}:
		case <-schedCtx.Done():
		}
		if schedCtx.Err() != nil {
			// The window is over before this append could go: it and the measured ones
			// after it were never sent. (When the run is interrupted, they are not counted.)
			if ctx.Err() == nil {
				r.unsent(k, warm, total)
			}
			break
		}
		if measured {
			r.mu.Lock()
			r.measured++
			if time.Since(due) > LateAfter {
				r.late++
			}
			r.mu.Unlock()
		}
		wg.Add(1)
		r.inFlight.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem; r.inFlight.Add(-1) }()
			r.send(ctx, streamName(k%r.cfg.Streams), due, measured)
		}()
	}
	r.mu.Lock()
	r.phase = "drain"
	r.mu.Unlock()
	wg.Wait()
	close(monQuit)
	<-monDone
}

// unsent counts the measured appends from the k-th on as failed: not sent.
func (r *streamsRun) unsent(k int, warm, total time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ; ; k++ {
		off := time.Duration(float64(k) * float64(time.Second) / r.cfg.Rate)
		if off >= total {
			return
		}
		if off >= warm {
			r.failures["not sent"]++
			r.measured++
		}
	}
}

// send appends one record to the stream and records the outcome.
func (r *streamsRun) send(ctx context.Context, stream string, due time.Time, measured bool) {
	actx, cancel := context.WithTimeout(ctx, r.cfg.AppendTimeout)
	defer cancel()
	st, b, err := r.post(actx, "/streams/"+url.PathEscape(stream)+"/records", r.body)
	at := time.Now()
	kind := ""
	switch {
	case err != nil && ctx.Err() != nil:
		kind = "interrupted"
	case err != nil && actx.Err() != nil:
		kind = "timeout"
	case err != nil:
		kind = "transport"
	case st != http.StatusOK:
		kind = fmt.Sprintf("http %d", st)
		var e *s2api.Error
		if errors.As(s2api.DecodeErrorBody(st, b), &e) && e.Code != "" {
			kind += " " + string(e.Code)
		}
	default:
		var ack struct {
			Start, End struct {
				SeqNum uint64 `json:"seq_num"`
			}
		}
		if json.Unmarshal(b, &ack) != nil || ack.End.SeqNum != ack.Start.SeqNum+1 {
			kind = "bad ack"
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kind != "" {
		r.secFails++
		if measured {
			r.failures[kind]++
		}
		return
	}
	r.secAcks++
	r.sec.Record(at.Sub(due))
	if !at.Before(r.warmEnd) && at.Before(r.schedEnd) {
		r.ackedInWin++
	}
	if measured {
		r.acked++
		r.ack.Record(at.Sub(due))
	}
}

// monitor takes the store's counts at the window's edges, samples memory, and writes a
// progress line a second, until quit.
func (r *streamsRun) monitor(quit <-chan struct{}) {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	warm, end := time.NewTimer(time.Until(r.warmEnd)), time.NewTimer(time.Until(r.schedEnd))
	defer warm.Stop()
	defer end.Stop()
	last := r.ops.snapshot()
	r.mu.Lock()
	r.phase = "warmup"
	if r.cfg.Warmup == 0 {
		r.phase = "measure"
	}
	r.mu.Unlock()
	for {
		select {
		case <-quit:
			r.mu.Lock()
			if r.req1 == nil { // interrupted before the window's end
				r.req1 = r.ops.snapshot()
			}
			if r.req0 == nil {
				r.req0 = r.req1
			}
			r.mu.Unlock()
			r.mem.sample()
			return
		case <-warm.C:
			s := r.ops.snapshot()
			r.mu.Lock()
			r.req0, r.phase = s, "measure"
			r.mu.Unlock()
		case <-end.C:
			s := r.ops.snapshot()
			r.mu.Lock()
			r.req1, r.phase = s, "drain"
			r.mu.Unlock()
		case now := <-tk.C:
			r.mem.sample()
			cur := r.ops.snapshot()
			puts := sumOp(cur, "put") - sumOp(last, "put")
			last = cur
			r.mu.Lock()
			line := fmt.Sprintf("%3.0fs %-7s: %5d acked/s %4d failed/s, ack p50 %s p99 %s, %d in flight, store PUTs %d/s, RSS %s",
				now.Sub(r.start).Seconds(), r.phase, r.secAcks, r.secFails, ms(r.sec.Quantile(0.5)), ms(r.sec.Quantile(0.99)),
				r.inFlight.Load(), puts, mb(r.mem.lastRSS))
			r.secAcks, r.secFails = 0, 0
			r.sec.Reset()
			r.mu.Unlock()
			r.progressf("%s", line)
		}
	}
}

// snapshot copies the counts.
func (c *opCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		m[k] = v
	}
	return m
}

// sumOp sums the counts of op over its purposes.
func sumOp(m map[string]int64, op string) int64 {
	var n int64
	for k, v := range m {
		if strings.HasPrefix(k, op+"/") {
			n += v
		}
	}
	return n
}

// mb formats bytes in MB (10^6).
func mb(b uint64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }
