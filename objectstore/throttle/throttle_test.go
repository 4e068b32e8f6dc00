package throttle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/throttle"
)

// clock is a clock the test steps by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestThrottleRefusesFastWritesToOneKey: at one write per second, a second write to a key
// within the second is ErrThrottled and applies nothing, another key is not held back, and
// after the second the key takes a write again; refused writes do not move the window.
func TestThrottleRefusesFastWritesToOneKey(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Unix(1000, 0)}
	st, err := throttle.New(objectstore.NewMemStore(), throttle.Config{KeyWritesPerSecond: 1, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v1, err := objectstore.PutBytes(ctx, st, "manifest", []byte("1"), objectstore.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(999 * time.Millisecond)
	_, err = objectstore.PutBytes(ctx, st, "manifest", []byte("2"), objectstore.IfMatch(v1.Version))
	if !errors.Is(err, objectstore.ErrThrottled) || errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("second write within the second: %v, want ErrThrottled", err)
	}
	if _, err := objectstore.PutBytes(ctx, st, "other", []byte("x"), objectstore.Unconditional()); err != nil {
		t.Fatalf("a write to another key: %v", err)
	}
	if data, _, err := objectstore.ReadAll(ctx, st, "manifest"); err != nil || string(data) != "1" {
		t.Fatalf("after a throttled write: %q %v, want the first", data, err)
	}
	c.t = c.t.Add(time.Millisecond) // one second after the accepted write, not the refused one
	if _, err := objectstore.PutBytes(ctx, st, "manifest", []byte("2"), objectstore.IfMatch(v1.Version)); err != nil {
		t.Fatalf("a write a second later: %v", err)
	}
	if st.Throttled() != 1 || st.Accepted() != 3 {
		t.Fatalf("counts: %d throttled, %d accepted; want 1 and 3", st.Throttled(), st.Accepted())
	}
	if got := objectstore.KeyWritesPerSecond(st); got != 1 {
		t.Fatalf("stated limit %v, want 1", got)
	}
}

func TestThrottleConfigRefused(t *testing.T) {
	for _, cfg := range []throttle.Config{{}, {KeyWritesPerSecond: -1}, {KeyWritesPerSecond: 1, WriteLatency: -time.Second}} {
		if _, err := throttle.New(objectstore.NewMemStore(), cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	// Every problem at once.
	_, err := throttle.New(nil, throttle.Config{WriteLatency: -1})
	if err == nil || !strings.Contains(err.Error(), "nil store") || !strings.Contains(err.Error(), "KeyWritesPerSecond") || !strings.Contains(err.Error(), "negative") {
		t.Errorf("New(nil, bad config): %v, want all three problems", err)
	}
}
