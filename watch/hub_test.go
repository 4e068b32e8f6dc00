package watch_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/watch"
)

// schedule returns how many polls an idle watcher makes in d: the first after min, each next
// after twice the last interval, at most max.
func schedule(d, minI, maxI time.Duration) int {
	n, at, iv := 0, time.Duration(0), minI
	for at+iv <= d {
		at += iv
		n++
		iv = min(2*iv, maxI)
	}
	return n
}

// TestManySubscribersOnePollPerInterval: 200 followers of an idle stream cost one
// conditional GET per interval in all, the intervals growing to MaxInterval, not one per
// follower per poll; and no poll transfers the manifest (all are "not modified").
func TestManySubscribersOnePollPerInterval(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStream(t, b.New(t))
				h := newHub(t, nil)
				known := s.load()
				ctx, cancel := context.WithCancel(context.Background())
				const followers = 200
				done := make(chan error, followers)
				for range followers {
					sub := subscribe(t, h, s.store)
					go func() {
						defer sub.Close()
						_, err := sub.Wait(ctx, known)
						done <- err
					}()
				}
				const idle = 30 * time.Second
				time.Sleep(idle)
				cancel()
				for range followers {
					if err := <-done; !errors.Is(err, context.Canceled) {
						t.Fatalf("an idle follower was woken: %v", err)
					}
				}
				cfg := h.Config()
				want := schedule(idle, cfg.MinInterval, cfg.MaxInterval)
				got := s.c.get("poll/get")
				t.Logf("%d followers, %v idle: %d polls (one per follower every %v would be %d)",
					followers, idle, got, cfg.MinInterval, followers*int(idle/cfg.MinInterval))
				if got != want {
					t.Fatalf("%d polls in %v, want %d", got, idle, want)
				}
			})
		})
	}
}

// TestIdleBackoffBoundedByMaxInterval: while a stream is idle the polls grow apart to
// MaxInterval and never further; a commit made after a long idle spell is seen within
// MaxInterval (the staleness bound), and the watcher polls fast again after it.
func TestIdleBackoffBoundedByMaxInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = 50*time.Millisecond, 2*time.Second })
		sub := subscribe(t, h, s.store)
		defer sub.Close()
		known := s.load()
		got := make(chan *manifest.Snapshot)
		go func() {
			snap, err := sub.Wait(context.Background(), known)
			if err != nil {
				t.Error(err)
			}
			got <- snap
		}()
		time.Sleep(time.Minute + 300*time.Millisecond)
		committed := time.Now()
		want := s.commit(3)
		snap := <-got
		stale := time.Since(committed)
		if snap.State.WriteCounter != want.State.WriteCounter {
			t.Fatalf("woken with write %d, want %d", snap.State.WriteCounter, want.State.WriteCounter)
		}
		if stale > h.Config().MaxInterval {
			t.Fatalf("a commit after an idle minute was seen %v later, more than MaxInterval %v", stale, h.Config().MaxInterval)
		}
		polls := s.c.pollTimes()
		var gaps []time.Duration
		for i := 1; i < len(polls); i++ {
			gaps = append(gaps, polls[i].Sub(polls[i-1]))
		}
		for i, g := range gaps {
			if g > h.Config().MaxInterval {
				t.Fatalf("gap %d between polls is %v, more than MaxInterval: %v", i, g, gaps)
			}
		}
		if len(gaps) < 2 || gaps[len(gaps)-2] != h.Config().MaxInterval {
			t.Fatalf("idle gaps never reached MaxInterval: %v", gaps)
		}
		// After the change the watcher polls at MinInterval again.
		n := len(polls)
		time.Sleep(h.Config().MinInterval)
		synctest.Wait() // the poll due now
		if polls := s.c.pollTimes(); len(polls) != n+1 {
			t.Fatalf("%d polls in the MinInterval after a change, want 1", len(polls)-n)
		}
	})
}

// TestPublishWakesWithoutReads: a commit published in-process wakes every follower with the
// manifest written, and the store sees no request for it.
func TestPublishWakesWithoutReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
		known := s.load()
		const followers = 20
		got := make(chan *manifest.Snapshot, followers)
		for range followers {
			sub := subscribe(t, h, s.store)
			defer sub.Close()
			go func() {
				snap, err := sub.Wait(context.Background(), known)
				if err != nil {
					t.Error(err)
				}
				got <- snap
			}()
		}
		synctest.Wait()
		written := s.commit(5)
		before := s.c.total()
		published := time.Now()
		h.Publish(s.store, key, written)
		for range followers {
			if snap := <-got; snap != written {
				t.Fatalf("woken with %+v, want the published manifest", snap)
			}
		}
		if waited := time.Since(published); waited != 0 {
			t.Fatalf("followers woken %v after the publish, want at once", waited)
		}
		if n := s.c.total() - before; n != 0 {
			t.Fatalf("%d store requests to wake %d followers of a published commit, want 0", n, followers)
		}
	})
}

// TestPublishTailPollsOnce: a tail published in-process makes the watcher poll at once: one
// GET wakes every follower.
func TestPublishTailPollsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
		known := s.load()
		const followers = 20
		got := make(chan *manifest.Snapshot, followers)
		for range followers {
			sub := subscribe(t, h, s.store)
			defer sub.Close()
			go func() {
				snap, err := sub.Wait(context.Background(), known)
				if err != nil {
					t.Error(err)
				}
				got <- snap
			}()
		}
		synctest.Wait()
		written := s.commit(5)
		before := s.c.get("poll/get")
		published := time.Now()
		h.PublishTail(s.store, key, written.State.Tail.SeqNum)
		h.PublishTail(s.store, key, known.State.Tail.SeqNum) // already seen: no poll
		for range followers {
			if snap := <-got; snap.State.WriteCounter != written.State.WriteCounter {
				t.Fatalf("woken at write %d, want %d", snap.State.WriteCounter, written.State.WriteCounter)
			}
		}
		if waited := time.Since(published); waited != 0 {
			t.Fatalf("followers woken %v after the publish, want at once (not at the next poll)", waited)
		}
		synctest.Wait()
		h.PublishTail(s.store, key, written.State.Tail.SeqNum) // seen now: no poll
		synctest.Wait()
		if n := s.c.get("poll/get") - before; n != 1 {
			t.Fatalf("%d polls for one published tail, want 1", n)
		}
	})
}

// TestLatePublishNeverMovesBack: a publish older than what the watcher holds is ignored; a
// follower is only ever handed newer manifests.
func TestLatePublishNeverMovesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
		sub := subscribe(t, h, s.store)
		defer sub.Close()
		first := s.commit(1)
		second := s.commit(1)
		h.Publish(s.store, key, second)
		h.Publish(s.store, key, first) // late
		snap, err := sub.Check(first)
		if err != nil || snap != second {
			t.Fatalf("check after %d: %+v, %v; want write %d", first.State.WriteCounter, snap, err, second.State.WriteCounter)
		}
		if snap, err := sub.Check(second); snap != nil || err != nil {
			t.Fatalf("check after the newest: %+v, %v; want nothing", snap, err)
		}
	})
}

// TestSubscriberAheadTeachesWatcher: a follower that holds a later manifest than the watcher
// (read by itself) hands it over: another follower is woken with it, with no store request.
func TestSubscriberAheadTeachesWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
		old := s.load()
		behind, ahead := subscribe(t, h, s.store), subscribe(t, h, s.store)
		defer behind.Close()
		defer ahead.Close()
		if snap, err := behind.Check(old); snap != nil || err != nil {
			t.Fatalf("nothing new yet: %+v, %v", snap, err)
		}
		fresh := s.commit(2)
		before := s.c.total()
		if snap, err := ahead.Check(fresh); snap != nil || err != nil {
			t.Fatalf("the follower ahead: %+v, %v", snap, err)
		}
		if snap, err := behind.Check(old); err != nil || snap != fresh {
			t.Fatalf("the follower behind: %+v, %v; want the manifest of the follower ahead", snap, err)
		}
		if n := s.c.total() - before; n != 0 {
			t.Fatalf("%d store requests, want 0", n)
		}
	})
}

// TestStreamDeletedAndRecreated: a follower whose stream is deleted gets ErrNotExist; one
// that holds the recreated stream is not handed the old generation the watcher still holds,
// and one that holds the old generation is handed the new one.
func TestStreamDeletedAndRecreated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
		oldGen := s.load()
		sub := subscribe(t, h, s.store)
		defer sub.Close()
		if snap, err := sub.Check(oldGen); snap != nil || err != nil {
			t.Fatalf("%+v, %v", snap, err)
		}
		if err := s.store.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.Wait(ctx, oldGen); !errors.Is(err, manifest.ErrNotExist) {
			t.Fatalf("deleted stream: %v, want ErrNotExist", err)
		}
		if _, err := s.h.Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
			t.Fatal(err)
		}
		newGen := s.load()
		// A new follower holding the new generation: the watcher's failure predates it.
		fresh := subscribe(t, h, s.store)
		defer fresh.Close()
		if snap, err := fresh.Check(newGen); snap != nil || err != nil {
			t.Fatalf("a follower of the new generation was handed %+v, %v", snap, err)
		}
		synctest.Wait() // the poll it asked for
		if snap, err := fresh.Check(newGen); snap != nil || err != nil {
			t.Fatalf("after a poll, a follower of the new generation was handed %+v, %v", snap, err)
		}
		// The follower that held the old generation learns of the new one.
		snap, err := sub.Wait(ctx, oldGen)
		if err != nil || snap.State.Generation != newGen.State.Generation {
			t.Fatalf("old follower: %+v, %v; want the new generation", snap, err)
		}
	})
}

// TestLastSubscriberStopsWatcher: the watcher polls only while someone follows, and Close
// of the hub waits for the watchers and fails the waits.
func TestLastSubscriberStopsWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, nil)
		a, b := subscribe(t, h, s.store), subscribe(t, h, s.store)
		a.Check(s.load())
		time.Sleep(5 * time.Second)
		a.Close()
		time.Sleep(5 * time.Second)
		n := s.c.get("poll/get")
		if n == 0 {
			t.Fatal("no polls while followed")
		}
		b.Close()
		b.Close()
		time.Sleep(time.Minute)
		if got := s.c.get("poll/get"); got != n {
			t.Fatalf("%d polls after the last follower left", got-n)
		}
		c := subscribe(t, h, s.store)
		errc := make(chan error)
		go func() {
			_, err := c.Wait(context.Background(), s.load())
			errc <- err
		}()
		synctest.Wait()
		h.Close()
		if err := <-errc; !errors.Is(err, watch.ErrClosed) {
			t.Fatalf("wait after the hub closed: %v", err)
		}
		if _, err := h.Subscribe(s.store, key); !errors.Is(err, watch.ErrClosed) {
			t.Fatalf("subscribe after close: %v", err)
		}
		c.Close()
	})
}

// TestConfigValidate reports every problem at once.
func TestConfigValidate(t *testing.T) {
	cfg := watch.Config{MinInterval: -1, MaxInterval: -2}
	_, err := watch.New(cfg)
	if !errors.Is(err, watch.ErrInvalidConfig) {
		t.Fatal(err)
	}
	for _, want := range []string{"min interval", "max interval", "error attempts", "logger"} {
		if !contains(err.Error(), want) {
			t.Errorf("%q not reported: %v", want, err)
		}
	}
	def := watch.DefaultConfig()
	if _, err := watch.New(def); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestCloseEndsWaitOfSubscription: closing a subscription ends a Wait of it in progress,
// from another goroutine, with ErrClosed.
func TestCloseEndsWaitOfSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStream(t, objectstore.NewMemStore())
		h := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
		sub := subscribe(t, h, s.store)
		errc := make(chan error, 1)
		go func() {
			_, err := sub.Wait(context.Background(), s.load())
			errc <- err
		}()
		synctest.Wait()
		closed := time.Now()
		sub.Close()
		if err := <-errc; !errors.Is(err, watch.ErrClosed) {
			t.Fatalf("wait after its subscription closed: %v", err)
		}
		if d := time.Since(closed); d != 0 {
			t.Fatalf("the wait ended %v after Close, want at once", d)
		}
	})
}
