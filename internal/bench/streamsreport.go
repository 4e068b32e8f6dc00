package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluice-dev/sluice/objectstore"
)

// StreamsRow is what one row of a many-streams run measured, over its measured window
// (after the warmup). Times are in milliseconds, memory in bytes.
type StreamsRow struct {
	Streams int     `json:"streams"`
	Mode    string  `json:"mode"`
	WindowS float64 `json:"window_s"`
	// OfferedPerS is the appends due in the window a second; SustainedPerS the acks that
	// arrived in the window a second, whenever their appends were due.
	OfferedPerS   float64 `json:"offered_per_s"`
	SustainedPerS float64 `json:"sustained_per_s"`
	// Appends is the appends due in the window, Acked those of them acknowledged (in the
	// window or while draining after it), Failures those that failed, by kind ("http 503
	// unavailable", "timeout", "transport", "bad ack", or "not sent": still waiting for a
	// slot under MaxInFlight when the window ended).
	Appends       int64            `json:"appends"`
	Acked         int64            `json:"acked"`
	Failures      map[string]int64 `json:"failures"`
	FailuresTotal int64            `json:"failures_total"`
	// Late is the appends of the window sent more than LateAfter after they were due.
	Late int64 `json:"late"`
	// Ack latency of the acked appends, from when each was due.
	AckP50Ms float64 `json:"ack_p50_ms"`
	AckP99Ms float64 `json:"ack_p99_ms"`
	AckMaxMs float64 `json:"ack_max_ms"`
	// Store requests a second in the window, by operation (get, head, put, delete, list)
	// and by purpose (commit, poll, fetch, gc, other), and all of them.
	StoreOpsPerS     map[string]float64 `json:"store_requests_per_s_by_op"`
	StorePurposePerS map[string]float64 `json:"store_requests_per_s_by_purpose"`
	StorePerS        float64            `json:"store_requests_per_s"`
	PutsPerS         float64            `json:"store_puts_per_s"`
	// PutsPerAppend is the window's PUTs over the acks that arrived in it.
	PutsPerAppend float64 `json:"store_puts_per_append"`
	// This process's (daemon and load generator) resident memory and Go heap in use: at
	// the row's start (after a GC), the highest sample (one a second), and at its end.
	RSSStart  uint64 `json:"rss_start_bytes"`
	RSSPeak   uint64 `json:"rss_peak_bytes"`
	RSSEnd    uint64 `json:"rss_end_bytes"`
	HeapStart uint64 `json:"heap_inuse_start_bytes"`
	HeapPeak  uint64 `json:"heap_inuse_peak_bytes"`
	HeapEnd   uint64 `json:"heap_inuse_end_bytes"`
	// Interrupted is set when the run was stopped before the row's end.
	Interrupted bool `json:"interrupted,omitempty"`
}

// row computes the figures.
func (r *streamsRun) row(interrupted bool) *StreamsRow {
	r.mu.Lock()
	defer r.mu.Unlock()
	win := r.cfg.Duration.Seconds()
	row := &StreamsRow{
		Streams: r.cfg.Streams, Mode: r.cfg.Mode, WindowS: win,
		OfferedPerS: float64(r.measured) / win, SustainedPerS: float64(r.ackedInWin) / win,
		Appends: r.measured, Acked: r.acked, Failures: r.failures, Late: r.late,
		AckP50Ms: msOf(r.ack.Quantile(0.5)), AckP99Ms: msOf(r.ack.Quantile(0.99)), AckMaxMs: msOf(r.ack.Max()),
		StoreOpsPerS: map[string]float64{}, StorePurposePerS: map[string]float64{},
		Interrupted: interrupted,
	}
	for _, n := range r.failures {
		row.FailuresTotal += n
	}
	var puts int64
	for k, n := range r.req1 {
		d := n - r.req0[k]
		if d <= 0 {
			continue
		}
		op, purpose := splitRequestKey(k)
		row.StoreOpsPerS[op] += float64(d) / win
		row.StorePurposePerS[purpose] += float64(d) / win
		row.StorePerS += float64(d) / win
		if op == string(objectstore.OpPut) {
			puts += d
		}
	}
	row.PutsPerS = float64(puts) / win
	if r.ackedInWin > 0 {
		row.PutsPerAppend = float64(puts) / float64(r.ackedInWin)
	}
	m := &r.mem
	m.mu.Lock()
	row.RSSStart, row.RSSPeak, row.RSSEnd = m.startRSS, m.peakRSS, m.lastRSS
	row.HeapStart, row.HeapPeak, row.HeapEnd = m.startHeap, m.peakHeap, m.lastHeap
	m.mu.Unlock()
	return row
}

// WriteStreamsTable writes rows side by side as a Markdown table, one column per row.
func WriteStreamsTable(w io.Writer, rows []*StreamsRow) error {
	var b strings.Builder
	cells := func(name string, f func(*StreamsRow) string) {
		b.WriteString("| " + name + " |")
		for _, r := range rows {
			b.WriteString(" " + f(r) + " |")
		}
		b.WriteString("\n")
	}
	cells("", func(r *StreamsRow) string {
		s := fmt.Sprintf("%s streams, %s", group(int64(r.Streams)), r.Mode)
		if r.Streams == 1 {
			s = "1 stream, " + r.Mode
		}
		if r.Interrupted {
			s += " (interrupted)"
		}
		return s
	})
	b.WriteString("| --- |" + strings.Repeat(" --- |", len(rows)) + "\n")
	cells("appends/s offered / sustained", func(r *StreamsRow) string {
		return fmt.Sprintf("%s / %s", group(round(r.OfferedPerS)), group(round(r.SustainedPerS)))
	})
	cells("failures", func(r *StreamsRow) string {
		if r.FailuresTotal == 0 {
			return "0"
		}
		return fmt.Sprintf("%s (%s)", group(r.FailuresTotal), countList(r.Failures))
	})
	cells(fmt.Sprintf("sent late (> %v)", LateAfter), func(r *StreamsRow) string { return group(r.Late) })
	cells("ack p50 / p99 / max", func(r *StreamsRow) string {
		return fmt.Sprintf("%s / %s / %s ms", group(round(r.AckP50Ms)), group(round(r.AckP99Ms)), group(round(r.AckMaxMs)))
	})
	cells("store PUTs/s", func(r *StreamsRow) string { return perS(r.PutsPerS) })
	cells("PUTs per append", func(r *StreamsRow) string { return fmt.Sprintf("%.2f", r.PutsPerAppend) })
	cells("store requests/s", func(r *StreamsRow) string { return perS(r.StorePerS) })
	for _, op := range objectstore.AllOps {
		cells("  "+strings.ToUpper(string(op))+"/s", func(r *StreamsRow) string { return perS(r.StoreOpsPerS[string(op)]) })
	}
	for _, p := range []objectstore.Purpose{objectstore.PurposeCommit, objectstore.PurposePoll, objectstore.PurposeFetch, objectstore.PurposeGC, objectstore.PurposeOther} {
		cells("  "+string(p)+"/s", func(r *StreamsRow) string { return perS(r.StorePurposePerS[string(p)]) })
	}
	cells("RSS start / peak / end", func(r *StreamsRow) string {
		return fmt.Sprintf("%s / %s / %s", mb(r.RSSStart), mb(r.RSSPeak), mb(r.RSSEnd))
	})
	cells("Go heap in use peak / end", func(r *StreamsRow) string {
		return fmt.Sprintf("%s / %s", mb(r.HeapPeak), mb(r.HeapEnd))
	})
	_, err := io.WriteString(w, b.String())
	return err
}

func round(v float64) int64 { return int64(v + 0.5) }

// perS formats a rate: whole numbers, one decimal under 10.
func perS(v float64) string {
	if v > 0 && v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return group(round(v))
}

// group formats n with thousands separators: 1,000.
func group(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + group(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
