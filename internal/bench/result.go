package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// gib is the unit of Result.RequestsPerGiB.
const gib = 1 << 30

// Result is what a run measured.
type Result struct {
	// Elapsed runs from the first send to the last ack.
	Elapsed time.Duration
	// Records and Bytes (metered: body, headers and 8 per record) acknowledged.
	Records, Bytes uint64
	// Ack is the latency from a record's send (or due time, at a rate) to its ack; E2E to
	// its delivery to the reader.
	Ack, E2E Histogram
	// Timeline holds a Point per second.
	Timeline []Point
	// Requests counts the object-store requests of the run (writes and the reader's reads,
	// not the stream's creation and deletion), by operation; nil when the target cannot tell.
	Requests map[string]int64
	// RequestsByPurpose counts the same requests by purpose (objectstore.Purpose: commit,
	// poll, fetch, gc, other); nil when Requests is.
	RequestsByPurpose map[string]int64
	// Interrupted is set when the run's context ended before the duration was up.
	Interrupted bool
}

func (r *run) result() *Result {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	el := r.rec.lastAck
	if el == 0 {
		el = time.Since(r.rec.start)
	}
	return &Result{Elapsed: el, Records: r.rec.records, Bytes: r.rec.bytes, Ack: r.rec.ack, E2E: r.rec.e2e, Timeline: slices.Clone(r.rec.timeline)}
}

// RecordsPerSecond is the acknowledged records per second.
func (res *Result) RecordsPerSecond() float64 { return float64(res.Records) / res.Elapsed.Seconds() }

// MBPerSecond is the acknowledged metered megabytes (10^6 bytes) per second.
func (res *Result) MBPerSecond() float64 { return float64(res.Bytes) / 1e6 / res.Elapsed.Seconds() }

// TotalRequests is the sum of Requests.
func (res *Result) TotalRequests() int64 {
	var n int64
	for _, v := range res.Requests {
		n += v
	}
	return n
}

// RequestsPerGiB is the object-store requests per GiB (metered) acknowledged; NaN when
// the requests are not known or nothing was acknowledged.
func (res *Result) RequestsPerGiB() float64 {
	if res.Requests == nil || res.Bytes == 0 {
		return math.NaN()
	}
	return float64(res.TotalRequests()) * gib / float64(res.Bytes)
}

// Summary is the JSON form of a result; times in milliseconds.
type Summary struct {
	Records        uint64           `json:"records"`
	Bytes          uint64           `json:"bytes"`
	ElapsedS       float64          `json:"elapsed_s"`
	RecordsPerS    float64          `json:"records_per_s"`
	MBPerS         float64          `json:"mb_per_s"`
	AckP50Ms       float64          `json:"ack_p50_ms"`
	AckP90Ms       float64          `json:"ack_p90_ms"`
	AckP99Ms       float64          `json:"ack_p99_ms"`
	AckMaxMs       float64          `json:"ack_max_ms"`
	E2ERecords     uint64           `json:"e2e_records"`
	E2EP50Ms       float64          `json:"e2e_p50_ms"`
	E2EP90Ms       float64          `json:"e2e_p90_ms"`
	E2EP99Ms       float64          `json:"e2e_p99_ms"`
	E2EMaxMs       float64          `json:"e2e_max_ms"`
	Requests       map[string]int64 `json:"store_requests,omitempty"`
	ByPurpose      map[string]int64 `json:"store_requests_by_purpose,omitempty"`
	RequestsTotal  *int64           `json:"store_requests_total,omitempty"`
	RequestsPerGiB *float64         `json:"store_requests_per_gib,omitempty"`
	Interrupted    bool             `json:"interrupted,omitempty"`
}

func msOf(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// Summary returns the figures of res for JSON output.
func (res *Result) Summary() Summary {
	s := Summary{
		Records: res.Records, Bytes: res.Bytes, ElapsedS: res.Elapsed.Seconds(),
		RecordsPerS: res.RecordsPerSecond(), MBPerS: res.MBPerSecond(),
		AckP50Ms: msOf(res.Ack.Quantile(0.5)), AckP90Ms: msOf(res.Ack.Quantile(0.9)),
		AckP99Ms: msOf(res.Ack.Quantile(0.99)), AckMaxMs: msOf(res.Ack.Max()),
		E2ERecords: res.E2E.Count(),
		E2EP50Ms:   msOf(res.E2E.Quantile(0.5)), E2EP90Ms: msOf(res.E2E.Quantile(0.9)),
		E2EP99Ms: msOf(res.E2E.Quantile(0.99)), E2EMaxMs: msOf(res.E2E.Max()),
		Interrupted: res.Interrupted,
	}
	if res.Requests != nil {
		s.Requests, s.ByPurpose = res.Requests, res.RequestsByPurpose
		n := res.TotalRequests()
		s.RequestsTotal = &n
		if per := res.RequestsPerGiB(); !math.IsNaN(per) {
			s.RequestsPerGiB = &per
		}
	}
	return s
}

// WriteText writes res for people: throughput, both latencies and the requests.
func (res *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "records      %d acknowledged in %.2fs: %.0f records/s, %.2f MB/s (metered)\n",
		res.Records, res.Elapsed.Seconds(), res.RecordsPerSecond(), res.MBPerSecond())
	lat := func(name string, h *Histogram) {
		fmt.Fprintf(&b, "%-12s p50 %s  p90 %s  p99 %s  max %s  (%d records)\n", name,
			ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.99)), ms(h.Max()), h.Count())
	}
	lat("ack", &res.Ack)
	lat("end-to-end", &res.E2E)
	if res.Requests != nil {
		per := "-"
		if v := res.RequestsPerGiB(); !math.IsNaN(v) {
			per = fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(&b, "store        %d requests (%s), %s per GiB ingested\n", res.TotalRequests(), countList(res.Requests), per)
		if len(res.RequestsByPurpose) > 0 {
			fmt.Fprintf(&b, "             by purpose: %s\n", countList(res.RequestsByPurpose))
		}
	}
	if res.Interrupted {
		b.WriteString("(interrupted: the figures cover the run until then)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// countList is "k1 n1, k2 n2" in key order.
func countList(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// RequestKey is how a Target's Requests names a count: the operation and the purpose
// ("get/poll").
func RequestKey(op, purpose string) string {
	if purpose == "" {
		purpose = "other"
	}
	return op + "/" + purpose
}

// splitRequestKey undoes RequestKey.
func splitRequestKey(k string) (op, purpose string) {
	op, purpose, ok := strings.Cut(k, "/")
	if !ok {
		purpose = "other"
	}
	return op, purpose
}
