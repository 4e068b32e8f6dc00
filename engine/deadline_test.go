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

// slowStore, while slowOpen is set, delays manifest reads made under a context with a
// deadline (a stream's producer opening it; the committer's reloads have none) by
// openDelay, or until that context ends; while slowPut is set, it delays every batch
// upload by putDelay.
type slowStore struct {
	objectstore.Store
	openDelay, putDelay time.Duration
	slowOpen, slowPut   atomic.Bool
}

func (s *slowStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if _, ok := ctx.Deadline(); ok && strings.HasSuffix(key, "/manifest") && s.slowOpen.Load() {
		select {
		case <-time.After(s.openDelay):
		case <-ctx.Done():
			return nil, objectstore.NewOpError("get", key, nil, ctx.Err())
		}
	}
	return s.Store.Get(ctx, key, opts)
}

func (s *slowStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if s.slowPut.Load() && strings.Contains(key, "/data/") {
		time.Sleep(s.putDelay)
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// The delivery timeout runs from the append's arrival, not from its batch's flush, for both
// append forms (unary, and the sessions' AppendAsync):
//   - an append whose stream's producer took 0.4 of the timeout to open, and whose upload
//     then takes 0.75 of it, fails with ErrDeliveryTimeout when the timeout has passed since
//     it arrived (plus the flush interval, its time in the open batch), nothing of it in
//     the stream; counted from the flush it would have been committed at 1.15 timeouts,
//     after an S2 SDK had given up on it and sent it again;
//   - one whose producer took 0.75 of the timeout to open is refused then, as it waited
//     more than half of it.
func TestDeliveryTimeoutCountsTheOpen(t *testing.T) {
	timeout := DefaultDeliveryTimeout
	for _, c := range []struct {
		name      string
		open, put time.Duration
		failAt    time.Duration // after the append's arrival
	}{
		{"slow-open-and-upload", timeout * 4 / 10, timeout * 3 / 4, timeout + DefaultConfig().Producer.FlushInterval},
		{"slower-open", timeout * 3 / 4, 0, timeout * 3 / 4},
	} {
		for _, form := range []string{"unary", "session"} {
			t.Run(c.name+"/"+form, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ctx := context.Background()
					store := &slowStore{Store: objectstore.NewMemStore(), openDelay: c.open, putDelay: c.put}
					cfg := DefaultConfig()
					cfg.Store = store
					e, err := New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer e.Close(ctx)
					if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
						t.Fatal(err)
					}
					appendOne := func(prefix string) (producer.Ack, error) {
						if form == "unary" {
							return e.Append(ctx, "", "s", records(1, prefix))
						}
						wait, err := e.AppendAsync(ctx, "", "s", records(1, prefix), &producer.Chain{})
						if err != nil {
							return producer.Ack{}, err
						}
						return wait(ctx)
					}

					store.slowOpen.Store(true)
					store.slowPut.Store(true)
					start := time.Now()
					_, err = appendOne("slow")
					if !errors.Is(err, producer.ErrDeliveryTimeout) {
						t.Fatalf("append after a slow open: %v, want ErrDeliveryTimeout", err)
					}
					if took := time.Since(start); took != c.failAt {
						t.Errorf("the append failed %v after it arrived, want %v", took, c.failAt)
					}
					t.Logf("append: %v", err)

					store.slowPut.Store(false)
					store.slowOpen.Store(false)
					ack, err := appendOne("next")
					if err != nil {
						t.Fatalf("append once the store is quick: %v", err)
					}
					if ack.Start.SeqNum != 0 {
						t.Fatalf("next append starts at %d, want 0: the failed append must not be in the stream", ack.Start.SeqNum)
					}
				})
			})
		}
	}
}

// Append's retry on a fresh producer keeps the append's arrival for opening that producer
// too: an append that fails on its first producer with ErrGenerationChanged late (the
// stream was deleted and created again by another daemon while the store was slow) is told
// of its failure within the delivery timeout of its arrival. (producer.New bounds its open
// by a whole timeout from its own start: bounded so, this append would be told at 1.5
// timeouts, past the S2 SDKs' 5 s resend.)
func TestDeliveryTimeoutRetryKeepsTheArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		timeout := DefaultDeliveryTimeout
		store := &slowStore{Store: objectstore.NewMemStore(), openDelay: timeout * 3 / 4, putDelay: timeout * 3 / 4}
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
