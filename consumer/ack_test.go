package consumer

import (
	"math/rand/v2"
	"testing"
)

// TestAckRangesModel: random Ack / AckThrough / skipped ranges against a model that keeps
// one flag per seq_num; the checkpoint candidate is always the first unacknowledged seq_num.
func TestAckRangesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 14))
	for round := range 200 {
		const n = 64
		c := &Consumer{}
		var model [n + 1]bool
		for step := range 100 {
			from := uint64(rng.IntN(n))
			to := from + 1
			switch rng.IntN(4) {
			case 0: // AckThrough
				from = 0
			case 1: // a skipped range
				to = min(n, from+uint64(1+rng.IntN(6)))
			}
			c.addLocked(from, to)
			for i := from; i < to; i++ {
				model[i] = true
			}
			want := uint64(0)
			for want < n && model[want] {
				want++
			}
			if c.low != want {
				t.Fatalf("round %d step %d: ack [%d,%d): low %d, want %d (ranges %v)", round, step, from, to, c.low, want, c.acked)
			}
			for s := c.low; s < n; s++ {
				in := false
				for _, r := range c.acked {
					in = in || (r.from <= s && s < r.to)
				}
				if in != model[s] {
					t.Fatalf("round %d step %d: seq_num %d acknowledged %v, ranges say %v", round, step, s, model[s], in)
				}
			}
			for i, r := range c.acked {
				if r.from <= c.low || r.from >= r.to || (i > 0 && c.acked[i-1].to >= r.from) {
					t.Fatalf("round %d step %d: ranges not sorted, disjoint and above low %d: %v", round, step, c.low, c.acked)
				}
				for s := r.from; s < r.to; s++ {
					if !model[s] {
						t.Fatalf("round %d step %d: range %v holds unacknowledged %d", round, step, r, s)
					}
				}
			}
		}
	}
}
