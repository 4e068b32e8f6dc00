package watch_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/watch"
)

// TestPublishingStoreWakesWithoutReads: commits written through a publishing store wake the
// followers of the stream in the process at once, with the manifest written and its version
// (the next poll finds it not modified), and no store read; writes of keys nobody follows
// pass through.
func TestPublishingStoreWakesWithoutReads(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				s := newStream(t, b.New(t))
				h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
				committer := manifest.Open(watch.PublishingStore(s.store, h), key)
				known := s.load()
				const followers = 10
				got := make(chan *manifest.Snapshot, followers)
				for range followers {
					sub := subscribe(t, h, s.store)
					defer sub.Close()
					go func() {
						for k := known; ; {
							snap, err := sub.Wait(ctx, k)
							if err != nil {
								return
							}
							got <- snap
							k = snap
						}
					}()
				}
				synctest.Wait()
				for round := range 3 {
					before := s.c.total()
					written, err := committer.Update(ctx, func(st *manifest.State) error { st.Tail.SeqNum += 2; return nil })
					if err != nil {
						t.Fatal(err)
					}
					writes := s.c.total() - before // the update's own load and write
					at := time.Now()
					for range followers {
						snap := <-got
						if snap.Version != written.Version || snap.State.WriteCounter != written.State.WriteCounter {
							t.Fatalf("round %d: woken with write %d at %q, want %d at %q", round, snap.State.WriteCounter, snap.Version, written.State.WriteCounter, written.Version)
						}
					}
					if d := time.Since(at); d != 0 {
						t.Fatalf("round %d: followers woken %v after the write, want at once", round, d)
					}
					if n := s.c.total() - before - writes; n != 0 {
						t.Fatalf("round %d: %d store requests to wake the followers, want 0", round, n)
					}
				}
				// The watcher polls with the published version: not modified.
				polls := s.c.get("poll/get")
				time.Sleep(time.Hour)
				synctest.Wait()
				if s.c.get("poll/get") != polls+1 {
					t.Fatalf("%d polls in the hour, want 1", s.c.get("poll/get")-polls)
				}
				select {
				case snap := <-got:
					t.Fatalf("a poll after the published writes woke a follower with write %d", snap.State.WriteCounter)
				default:
				}
				// A key nobody follows is written through as it is.
				pub := watch.PublishingStore(s.store, h)
				if _, err := objectstore.PutBytes(ctx, pub, "other/manifest", []byte("x"), objectstore.IfAbsent()); err != nil {
					t.Fatal(err)
				}
				if data, _, err := objectstore.ReadAll(ctx, s.store, "other/manifest"); err != nil || string(data) != "x" {
					t.Fatalf("write of an unfollowed key: %q, %v", data, err)
				}
			})
		})
	}
}

// TestPublishingStoreConforms: the wrapper keeps the Store contract.
func TestPublishingStoreConforms(t *testing.T) {
	h, err := watch.New(watch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		return watch.PublishingStore(objectstore.NewMemStore(), h)
	})
}
