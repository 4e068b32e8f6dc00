package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// benchStreamsRow is the part of a bench streams --json row the test checks.
type benchStreamsRow struct {
	Streams       int                `json:"streams"`
	Mode          string             `json:"mode"`
	WindowS       float64            `json:"window_s"`
	OfferedPerS   float64            `json:"offered_per_s"`
	SustainedPerS float64            `json:"sustained_per_s"`
	Appends       int64              `json:"appends"`
	Acked         int64              `json:"acked"`
	Failures      map[string]int64   `json:"failures"`
	FailuresTotal int64              `json:"failures_total"`
	AckP50Ms      float64            `json:"ack_p50_ms"`
	AckP99Ms      float64            `json:"ack_p99_ms"`
	AckMaxMs      float64            `json:"ack_max_ms"`
	OpsPerS       map[string]float64 `json:"store_requests_per_s_by_op"`
	PurposePerS   map[string]float64 `json:"store_requests_per_s_by_purpose"`
	StorePerS     float64            `json:"store_requests_per_s"`
	PutsPerS      float64            `json:"store_puts_per_s"`
	PutsPerAppend float64            `json:"store_puts_per_append"`
	RSSPeak       uint64             `json:"rss_peak_bytes"`
	HeapPeak      uint64             `json:"heap_inuse_peak_bytes"`
}

// TestBenchStreamsRows: bench streams on two rows (1 and 20 streams sharing 40 appends/s for
// 1 s after 0.5 s of warmup, 1 ms of store latency each way, temporary stores) prints one
// JSON object with a row each, in order, whose figures hold together: every append of the
// window acked and none failed, a sustained rate near the offered one, ordered latencies,
// PUTs counted (today's path: at least an upload and a manifest write per commit, at most
// two per append) and the commit PUTs among the requests by purpose, memory sampled; and
// progress lines on stderr. The load is a fixed schedule: nothing random, no seed.
func TestBenchStreamsRows(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, dir, "", nil, "bench", "streams", "--streams", "1,20", "--rate", "40", "--duration", "1s",
		"--warmup", "500ms", "--store-latency", "1ms", "--json")
	if r.code != 0 {
		t.Fatalf("bench streams: exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Settings struct {
			TempStore bool `json:"temporary_store"`
		} `json:"settings"`
		Rows []benchStreamsRow `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("bench streams --json: %v\n%s", err, r.stdout)
	}
	if !out.Settings.TempStore || len(out.Rows) != 2 || out.Rows[0].Streams != 1 || out.Rows[1].Streams != 20 {
		t.Fatalf("settings %+v, rows %+v: want a temporary store and rows of 1 and 20 streams", out.Settings, out.Rows)
	}
	for _, row := range out.Rows {
		if row.Mode != "manifest" || row.WindowS != 1 || row.Appends != 40 || row.OfferedPerS != 40 {
			t.Errorf("%d streams: mode %q, window %vs, %d appends offered at %v/s: want manifest, 1s, 40 at 40/s", row.Streams, row.Mode, row.WindowS, row.Appends, row.OfferedPerS)
		}
		if row.FailuresTotal != 0 || len(row.Failures) != 0 || row.Acked != row.Appends {
			t.Errorf("%d streams: %d of %d acked, failures %v: want all acked, none failed", row.Streams, row.Acked, row.Appends, row.Failures)
		}
		// Acks arriving in the window: those due in it, less the last ones' latency, plus
		// the warmup's last ones.
		if row.SustainedPerS < 30 || row.SustainedPerS > 50 {
			t.Errorf("%d streams: sustained %v/s at 40/s offered", row.Streams, row.SustainedPerS)
		}
		if !(row.AckP50Ms > 0 && row.AckP50Ms <= row.AckP99Ms && row.AckP99Ms <= row.AckMaxMs) {
			t.Errorf("%d streams: ack p50 %v p99 %v max %v: want 0 < p50 <= p99 <= max", row.Streams, row.AckP50Ms, row.AckP99Ms, row.AckMaxMs)
		}
		// Each commit is an upload and a manifest write, and commits group appends: between
		// one PUT per append (only were all 40 a second grouped into 20 commits) and two.
		if row.PutsPerS <= 0 || row.OpsPerS["put"] != row.PutsPerS || row.PutsPerAppend < 0.5 || row.PutsPerAppend > 2.2 {
			t.Errorf("%d streams: %v PUTs/s (by op %v), %v per append: want PUTs, 0.5 to 2.2 per append", row.Streams, row.PutsPerS, row.OpsPerS, row.PutsPerAppend)
		}
		var byOp, byPurpose float64
		for _, v := range row.OpsPerS {
			byOp += v
		}
		for _, v := range row.PurposePerS {
			byPurpose += v
		}
		if row.PurposePerS["commit"] <= 0 || math.Abs(byOp-row.StorePerS) > 1e-6 || math.Abs(byPurpose-row.StorePerS) > 1e-6 {
			t.Errorf("%d streams: all %v/s, by op %v, by purpose %v: want commit requests, both adding up to all", row.Streams, row.StorePerS, row.OpsPerS, row.PurposePerS)
		}
		if row.RSSPeak == 0 || row.HeapPeak == 0 {
			t.Errorf("%d streams: RSS peak %d, heap peak %d: want samples", row.Streams, row.RSSPeak, row.HeapPeak)
		}
	}
	for _, want := range []string{"bench streams 1 manifest: creating 1 streams", "bench streams 20 manifest:   1s ", "bench streams 20 manifest: closing the daemon"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr has no %q:\n%s", want, r.stderr)
		}
	}
}
