package watch_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
	"github.com/sluice-dev/sluice/watch"
)

// TestFollowersUnderRandomCommits: followers of a stream committed at random times, with
// publishes that are made at once, late (an older manifest after a newer one), as a tail
// only, or lost, and (in the faults case) polls that fail or stall, are handed only newer
// manifests, each of them, and all end at the last commit; without faults, within
// MaxInterval of it.
func TestFollowersUnderRandomCommits(t *testing.T) {
	for _, faults := range []bool{false, true} {
		name := "clean"
		if faults {
			name = "faults"
		}
		t.Run(name, func(t *testing.T) {
			seed := testseed.Get(t)
			synctest.Test(t, func(t *testing.T) { followRandom(t, seed, faults) })
		})
	}
}

func followRandom(t *testing.T, seed uint64, faults bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 32))
	raw := objectstore.NewMemStore()
	writer := newStream(t, raw)
	var watched objectstore.Store = writer.store
	if faults {
		fs, err := faultstore.New(writer.store, seed, faultstore.Rule{Ops: []objectstore.Op{objectstore.OpGet},
			ErrBefore: 0.1, ErrAfter: 0.1, BodyErr: 0.1, DelayProb: 0.2, Delay: 10 * time.Millisecond, DelayJitter: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		watched = fs
	}
	h := newHub(t, func(c *watch.Config) { c.ErrorAttempts = 1 << 20 })
	start := writer.load()

	commits := 20 + rng.IntN(30)
	sizes := make([]uint64, commits)
	target := start.State.Tail.SeqNum
	for i := range sizes {
		sizes[i] = uint64(1 + rng.IntN(5))
		target += sizes[i]
	}
	const followers = 6
	ended := make(chan time.Time, followers)
	for i := range followers {
		sub := subscribe(t, h, watched)
		go func() {
			defer sub.Close()
			known := start
			if i%2 == 1 {
				known = nil // holds nothing: handed the first view at once
			}
			for {
				snap, err := sub.Wait(ctx, known)
				if err != nil {
					t.Errorf("follower %d: %v", i, err)
					return
				}
				if known != nil && (snap.State.Generation != known.State.Generation || snap.State.WriteCounter <= known.State.WriteCounter) {
					t.Errorf("follower %d: handed write %d after %d", i, snap.State.WriteCounter, known.State.WriteCounter)
					return
				}
				known = snap
				if known.State.Tail.SeqNum == target {
					ended <- time.Now()
					return
				}
			}
		}()
	}

	var late []*manifest.Snapshot
	for _, n := range sizes {
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
		snap := writer.commit(n)
		switch p := rng.Float64(); {
		case p < 0.35:
			h.Publish(watched, key, snap)
		case p < 0.5:
			h.PublishTail(watched, key, snap.State.Tail.SeqNum)
		case p < 0.7:
			late = append(late, snap)
		}
		if len(late) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(late))
			h.Publish(watched, key, late[i])
			late = append(late[:i], late[i+1:]...)
		}
	}
	done := time.Now()
	for range followers {
		select {
		case at := <-ended:
			if !faults && at.Sub(done) > h.Config().MaxInterval {
				t.Errorf("a follower reached the last commit %v after it, more than MaxInterval", at.Sub(done))
			}
		case <-time.After(10 * time.Minute):
			t.Fatalf("a follower never reached the last commit")
		}
	}
	t.Logf("%d commits, %d polls", commits, writer.c.get("poll/get"))
}
