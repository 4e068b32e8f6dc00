package bench

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Point is one window (about a second) of a run's timeline.
type Point struct {
	// At is the window's end, since the run began; Span its length.
	At, Span time.Duration
	// Records and Bytes (metered) acknowledged in the window.
	Records, Bytes uint64
	// Latency percentiles of the records acknowledged (Ack) and delivered (E2E) in it.
	AckP50, AckP99, AckMax time.Duration
	E2EP50, E2EP99, E2EMax time.Duration
}

// recorder collects a run's measurements; it is safe for concurrent use.
type recorder struct {
	start time.Time

	mu             sync.Mutex
	ack, e2e       Histogram // the whole run
	wAck, wE2E     Histogram // the current window
	records, bytes uint64
	wRecords       uint64
	wBytes         uint64
	delivered      uint64
	lastAck        time.Duration
	windowStart    time.Duration
	timeline       []Point
}

// acked records an append's ack at time at for records sent at stamps (since start).
func (r *recorder) acked(at time.Time, stamps []time.Duration, bytes int) {
	now := at.Sub(r.start)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range stamps {
		r.ack.Record(now - s)
		r.wAck.Record(now - s)
	}
	n := uint64(len(stamps))
	r.records += n
	r.wRecords += n
	r.bytes += uint64(bytes)
	r.wBytes += uint64(bytes)
	r.lastAck = max(r.lastAck, now)
}

// deliveredAt records records delivered to the reader at now (since start) that were sent at
// stamps.
func (r *recorder) deliveredAt(now time.Duration, stamps []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range stamps {
		r.e2e.Record(now - s)
		r.wE2E.Record(now - s)
	}
	r.delivered += uint64(len(stamps))
}

// counts returns the records acknowledged and delivered so far.
func (r *recorder) counts() (acked, delivered uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records, r.delivered
}

// tick closes the current window at now (since start), adds it to the timeline and
// returns it.
func (r *recorder) tick(now time.Duration) Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Point{
		At: now, Span: now - r.windowStart, Records: r.wRecords, Bytes: r.wBytes,
		AckP50: r.wAck.Quantile(0.5), AckP99: r.wAck.Quantile(0.99), AckMax: r.wAck.Max(),
		E2EP50: r.wE2E.Quantile(0.5), E2EP99: r.wE2E.Quantile(0.99), E2EMax: r.wE2E.Max(),
	}
	r.timeline = append(r.timeline, p)
	r.wAck.Reset()
	r.wE2E.Reset()
	r.wRecords, r.wBytes, r.windowStart = 0, 0, now
	return p
}

// pending reports whether the current window holds anything.
func (r *recorder) pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wRecords > 0 || r.wE2E.Count() > 0
}

// writeProgress writes one progress line for p.
func writeProgress(w io.Writer, overwrite bool, p Point, acked, delivered uint64) {
	rate, mbps := 0.0, 0.0
	if s := p.Span.Seconds(); s > 0 {
		rate, mbps = float64(p.Records)/s, float64(p.Bytes)/s/1e6
	}
	line := fmt.Sprintf("bench %4.0fs: %9.0f records/s %7.2f MB/s, ack p50 %s p99 %s, e2e p50 %s p99 %s, %d acked, %d read",
		p.At.Seconds(), rate, mbps, ms(p.AckP50), ms(p.AckP99), ms(p.E2EP50), ms(p.E2EP99), acked, delivered)
	if overwrite {
		fmt.Fprintf(w, "\r%s\x1b[K", line)
		return
	}
	fmt.Fprintln(w, line)
}

// ms formats d in milliseconds for progress lines.
func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
