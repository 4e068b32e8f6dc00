package watch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/journaltest"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/watch"
)

// keyCounter counts Gets by key.
type keyCounter struct {
	objectstore.Store
	mu   sync.Mutex
	gets map[string]int
}

func (c *keyCounter) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	c.mu.Lock()
	c.gets[key]++
	c.mu.Unlock()
	return c.Store.Get(ctx, key, opts)
}

func (c *keyCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.gets))
	for k, v := range c.gets {
		out[k] = v
	}
	return out
}

// span is what a view says of one entry: the bytes that hold which seq_nums.
type span struct {
	key            string
	offset, length uint64
	first, records uint64
}

func spans(st *manifest.State) []span {
	var out []span
	for _, e := range st.Entries {
		out = append(out, span{e.Key, e.Offset, e.Length, e.FirstSeq, e.Records})
	}
	return out
}

// waitTail waits for a view whose tail is want.
func waitTail(t *testing.T, sub *watch.Subscription, known *manifest.Snapshot, want manifest.Position) *manifest.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for known == nil || known.State.Tail != want {
		snap, err := sub.Wait(ctx, known)
		if err != nil {
			t.Fatalf("waiting for tail %+v (at %+v): %v", want, known.State.Tail, err)
		}
		if known != nil && snap.State.Tail.SeqNum < known.State.Tail.SeqNum {
			t.Fatalf("the view moved back from %+v to %+v", known.State.Tail, snap.State.Tail)
		}
		known = snap
	}
	return known
}

// TestJournalFollowerSeesEveryWindow: a follower of a journal'd stream is shown each new
// window (the manifest unchanged), and a checkpoint mid-follow (the manifest rewritten with
// windows folded in, published through a PublishingStore) shows the same entries at the
// same seq_nums.
func TestJournalFollowerSeesEveryWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	hub := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Millisecond, 5*time.Millisecond })
	base := objectstore.NewMemStore()
	s := journaltest.New(t, watch.PublishingStore(base, hub), key, journal.ID(rng.Uint64()))
	sub := subscribe(t, hub, base)
	defer sub.Close()
	var known *manifest.Snapshot
	for w := range 10 {
		s.Window(journaltest.RandomBatches(rng, fmt.Sprintf("w%d", w))...)
		known = waitTail(t, sub, known, s.Full.Tail)
		if w%3 == 2 {
			before := spans(known.State)
			s.CheckpointBefore(s.Next - 1) // the last window stays unfolded
			known = waitTail(t, sub, known, s.Full.Tail)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			for known.State.WriteCounter != s.Manifest.WriteCounter {
				snap, err := sub.Wait(ctx, known)
				if err != nil {
					t.Fatalf("waiting for the checkpoint: %v", err)
				}
				known = snap
			}
			cancel()
			if got := spans(known.State); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Fatalf("checkpoint before window %d changed the view:\n got %v\nwant %v", s.Next-1, got, before)
			}
			if known.State.Journal == nil || known.State.Journal.From != s.Next {
				t.Fatalf("view after the checkpoint folded to %+v, want %d", known.State.Journal, s.Next)
			}
		}
	}
}

// TestJournalIdlePollCost: while nothing is committed, each poll of a journal'd stream costs
// one conditional manifest GET and one GET of the next window's key, and no window is read
// twice.
func TestJournalIdlePollCost(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	hub := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Millisecond, 2*time.Millisecond })
	store := &keyCounter{Store: objectstore.NewMemStore(), gets: map[string]int{}}
	s := journaltest.New(t, store, key, journal.ID(rng.Uint64()))
	for w := range 3 {
		s.Window(journaltest.RandomBatches(rng, fmt.Sprintf("w%d", w))...)
	}
	start := store.snapshot()
	sub := subscribe(t, hub, store)
	defer sub.Close()
	known := waitTail(t, sub, nil, s.Full.Tail)
	before := store.snapshot()
	time.Sleep(100 * time.Millisecond)
	after := store.snapshot()
	next := journal.Key(s.ID, s.Next)
	polls := after[key] - before[key]
	if polls < 5 {
		t.Fatalf("only %d polls in 100 ms", polls)
	}
	for k, n := range after {
		d := n - before[k]
		switch {
		case k == key:
		case k == next:
			if d < polls-1 || d > polls+1 { // a poll may be in flight at either end
				t.Errorf("%d GETs of the next window key in %d polls", d, polls)
			}
		case d != 0:
			t.Errorf("%d GETs of %s while idle", d, k)
		}
	}
	for w := range 3 {
		k := journal.Key(s.ID, uint64(w))
		if n := after[k] - start[k]; n != 2 {
			t.Errorf("window %d read %d times, want twice (its index, then its section)", w, n)
		}
	}
	if snap, err := sub.Check(known); err != nil || snap != nil {
		t.Fatalf("Check while idle = %v, %v", snap, err)
	}
}
