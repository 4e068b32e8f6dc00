package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// reviewOpenStore: while slowOpen is set, manifest reads made under a context with
// a deadline (producer.New's open of a stream; the committer's reloads have none) take
// openDelay; while slowPut is set, batch uploads take putDelay.
type reviewOpenStore struct {
	objectstore.Store
	openDelay, putDelay time.Duration
	slowOpen, slowPut   atomic.Bool
}

func (s *reviewOpenStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if _, ok := ctx.Deadline(); ok && strings.HasSuffix(key, "/manifest") && s.slowOpen.Load() {
		select { // a slow answer, which the caller may stop waiting for
		case <-time.After(s.openDelay):
		case <-ctx.Done():
			return nil, objectstore.NewOpError("get", key, nil, ctx.Err())
		}
	}
	return s.Store.Get(ctx, key, opts)
}

func (s *reviewOpenStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if s.slowPut.Load() && strings.Contains(key, "/data/") {
		time.Sleep(s.putDelay)
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// Append's retry on a fresh producer keeps the append's arrival for opening that producer
// too: an append that fails on its first producer with ErrGenerationChanged late (the
// stream was deleted and created again by another daemon while the store was slow) is told
// of its failure within the delivery timeout of its arrival. (producer.New bounds its open
// by a whole timeout from its own start, and the first version of the arrival-based bound
// told this append at 1.5 timeouts, past the S2 SDKs' 5 s resend: found by review.)
func TestDeliveryTimeoutRetryKeepsTheArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		timeout := DefaultDeliveryTimeout
		store := &reviewOpenStore{Store: objectstore.NewMemStore(), openDelay: timeout * 3 / 4, putDelay: timeout * 3 / 4}
		cfg := DefaultConfig()
		cfg.Store = store
		cfg.Producer.Backoff = manifest.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond, Multiplier: 2}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(ctx)
		e2, err := New(cfg) // another daemon on the same store
		if err != nil {
			t.Fatal(err)
		}
		defer e2.Close(ctx)
		if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Append(ctx, "", "s", records(1, "a")); err != nil { // e's producer is open
			t.Fatal(err)
		}
		if _, err := e2.DeleteStream(ctx, "", "s"); err != nil {
			t.Fatal(err)
		}
		if _, err := e2.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
			t.Fatal(err)
		}

		store.slowPut.Store(true)
		store.slowOpen.Store(true)
		start := time.Now()
		_, err = e.Append(ctx, "", "s", records(1, "b"))
		took := time.Since(start)
		t.Logf("append: %v after %v", err, took)
		if !errors.Is(err, producer.ErrDeliveryTimeout) {
			t.Fatalf("append: %v, want ErrDeliveryTimeout", err)
		}
		if took > timeout {
			t.Errorf("the append was told of its failure %v after it arrived, past the delivery timeout %v", took, timeout)
		}
		store.slowPut.Store(false)
		store.slowOpen.Store(false)
	})
}
