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

// slowStore delays the next manifest read by openDelay once slowOpen is set (the read a
// stream's producer opens with), and every batch upload by putDelay while slowPut is set.
type slowStore struct {
	objectstore.Store
	openDelay, putDelay time.Duration
	slowOpen, slowPut   atomic.Bool
}

func (s *slowStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if strings.HasSuffix(key, "/manifest") && s.slowOpen.CompareAndSwap(true, false) {
		time.Sleep(s.openDelay)
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
