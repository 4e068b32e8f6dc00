package bench

import (
	"math"
	"time"
)

// Histogram bucket layout: bucket 0 holds values under histMin; bucket i >= 1 holds
// [histMin·histGrowth^(i-1), histMin·histGrowth^i). The last bucket also takes everything
// above it (about 6 hours).
const (
	histMin     = time.Microsecond
	histGrowth  = 1.01
	histBuckets = 2400
)

var logGrowth = math.Log(histGrowth)

// Histogram counts durations in about 2400 buckets each about 1% wide, from 1µs to some
// hours. The zero value is empty and ready to use; it is not safe for concurrent use.
type Histogram struct {
	counts   []uint64
	n        uint64
	min, max time.Duration
	sum      float64 // nanoseconds
}

func bucketOf(d time.Duration) int {
	if d < histMin {
		return 0
	}
	i := 1 + int(math.Log(float64(d)/float64(histMin))/logGrowth)
	return min(i, histBuckets-1)
}

// bucketMid is the geometric middle of bucket i.
func bucketMid(i int) time.Duration {
	if i == 0 {
		return histMin / 2
	}
	lo := float64(histMin) * math.Pow(histGrowth, float64(i-1))
	return time.Duration(lo * math.Sqrt(histGrowth))
}

// Record adds one value (negative values count as 0).
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	h.counts[bucketOf(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of values recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest value recorded (0 when empty).
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the mean of the values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the q-quantile (0 <= q <= 1) to within about 1%: the middle of the
// bucket holding the value of rank ceil(q·n), clamped to the recorded minimum and maximum;
// the maximum itself for rank n or the top bucket. It is 0 when the histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	if rank == h.n {
		return h.max
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == histBuckets-1 {
				return h.max
			}
			return min(max(bucketMid(i), h.min), h.max)
		}
	}
	return h.max
}

// CDF calls fn for each non-empty bucket in increasing order with the bucket's middle
// value and the fraction of values at or below the bucket.
func (h *Histogram) CDF(fn func(v time.Duration, frac float64)) {
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		fn(min(max(bucketMid(i), h.min), h.max), float64(seen)/float64(h.n))
	}
}

// Reset empties h, keeping its buckets' memory.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.n, h.min, h.max, h.sum = 0, 0, 0, 0
}
