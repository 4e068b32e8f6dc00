package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// TestHistogramQuantilesWithinOnePercent: the quantiles of random latencies (1µs to 10s,
// log-uniform) are within about 1% of the exact ones from a sorted slice, the maximum is
// exact, and a merge equals recording everything in one.
func TestHistogramQuantilesWithinOnePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	var h, a, b Histogram
	vals := make([]time.Duration, 20000)
	for i := range vals {
		v := time.Duration(float64(time.Microsecond) * math.Pow(10, rng.Float64()*7))
		vals[i] = v
		h.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	slices.Sort(vals)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(q*float64(len(vals)-1)+0.5)]
		got := h.Quantile(q)
		if ratio := float64(got) / float64(exact); ratio < 0.985 || ratio > 1.015 {
			t.Errorf("Quantile(%v) = %v, exact %v (ratio %.4f)", q, got, exact, ratio)
		}
	}
	if h.Max() != vals[len(vals)-1] {
		t.Errorf("Max = %v, want %v", h.Max(), vals[len(vals)-1])
	}
	if h.Count() != uint64(len(vals)) {
		t.Errorf("Count = %d, want %d", h.Count(), len(vals))
	}
	a.Merge(&b)
	for _, q := range []float64{0.5, 0.99} {
		if a.Quantile(q) != h.Quantile(q) {
			t.Errorf("merged Quantile(%v) = %v, want %v", q, a.Quantile(q), h.Quantile(q))
		}
	}
	prev := 0.0
	h.CDF(func(v time.Duration, frac float64) {
		if frac < prev || frac > 1 {
			t.Fatalf("CDF not increasing at %v: %v after %v", v, frac, prev)
		}
		prev = frac
	})
	if prev != 1 {
		t.Errorf("CDF ends at %v, want 1", prev)
	}
}

// TestHistogramEdges: an empty histogram answers 0; a single value is every quantile;
// values below 1µs and far above the top bucket still count, with the maximum exact.
func TestHistogramEdges(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Mean() != 0 {
		t.Fatalf("empty histogram: p50 %v max %v mean %v, want 0", h.Quantile(0.5), h.Max(), h.Mean())
	}
	h.Record(42 * time.Millisecond)
	for _, q := range []float64{0, 0.5, 1} {
		if got := h.Quantile(q); got != 42*time.Millisecond {
			t.Errorf("one value: Quantile(%v) = %v, want 42ms", q, got)
		}
	}
	h.Reset()
	h.Record(100 * time.Nanosecond)
	h.Record(-time.Second)
	h.Record(100 * time.Hour)
	if h.Count() != 3 || h.Max() != 100*time.Hour {
		t.Errorf("count %d max %v, want 3 and 100h", h.Count(), h.Max())
	}
	if got := h.Quantile(1); got != 100*time.Hour {
		t.Errorf("Quantile(1) = %v, want the maximum 100h", got)
	}
	if got := h.Quantile(0.01); got > time.Microsecond {
		t.Errorf("Quantile(0.01) = %v, want under 1µs", got)
	}
}
