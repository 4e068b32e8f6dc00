package manifest

import (
	"context"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"time"
)

// Backoff is a jittered exponential backoff: attempt n (from 0) waits a uniformly random
// duration in [0, min(Max, Initial·Multiplier^n)] ("full jitter").
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
}

// DefaultBackoff: 10 ms doubling to 1 s.
func DefaultBackoff() Backoff {
	return Backoff{Initial: 10 * time.Millisecond, Max: time.Second, Multiplier: 2}
}

// Validate reports every problem.
func (b Backoff) Validate() error {
	var errs []error
	if b.Initial <= 0 {
		errs = append(errs, fmt.Errorf("backoff initial %v must be > 0", b.Initial))
	}
	if b.Max < b.Initial {
		errs = append(errs, fmt.Errorf("backoff max %v must be >= initial %v", b.Max, b.Initial))
	}
	if b.Multiplier < 1 || math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0) {
		errs = append(errs, fmt.Errorf("backoff multiplier %v must be >= 1", b.Multiplier))
	}
	return errors.Join(errs...)
}

// Delay returns the wait before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	d := float64(b.Initial) * math.Pow(b.Multiplier, float64(min(attempt, 60)))
	if d > float64(b.Max) || math.IsNaN(d) {
		d = float64(b.Max)
	}
	if d <= 0 {
		return 0
	}
	if d >= float64(math.MaxInt64) { // a Max of "no cap": float64(MaxInt64) rounds up past it
		return time.Duration(mrand.Int64N(math.MaxInt64))
	}
	return time.Duration(mrand.Int64N(int64(d) + 1))
}

// Sleep waits for Delay(attempt) or until ctx is done.
func (b Backoff) Sleep(ctx context.Context, attempt int) error {
	t := time.NewTimer(b.Delay(attempt))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
