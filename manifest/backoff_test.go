package manifest

import (
	"math"
	"testing"
	"time"
)

// TestBackoffHugeMax: a Backoff that Validate accepts, with Max = the largest
// Duration (a caller's "no cap"), made Delay panic once the exponential reached Max:
// float64(math.MaxInt64) rounds up to 2^63, int64() of it overflows to a negative number,
// and rand.Int64N panicked. Update, LoadOrCreate and the consumer/producer retry loops call it;
// Delay now clamps.
func TestBackoffHugeMax(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: math.MaxInt64, Multiplier: 10}
	if err := b.Validate(); err != nil {
		t.Fatalf("setup: Validate rejects it: %v", err)
	}
	for attempt := range 30 {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Delay(%d) of a validated backoff panicked: %v", attempt, r)
				}
			}()
			if d := b.Delay(attempt); d < 0 || d > b.Max {
				t.Fatalf("Delay(%d) = %v, outside [0, Max]", attempt, d)
			}
		}()
	}
}
