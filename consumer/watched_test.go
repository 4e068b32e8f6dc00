package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/watch"
)

// purposeCounter counts store requests by purpose and op.
type purposeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *purposeCounter) ObserveOp(e objectstore.OpEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[string(e.Purpose)+"/"+string(e.Op)]++
}

func (c *purposeCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func newHub(t testing.TB, mod func(*watch.Config)) *watch.Hub {
	t.Helper()
	cfg := watch.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	h, err := watch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestWatchedFollowersShareOnePoll: followers of one stream given one hub, through one
// reader or several, cost one conditional GET per hub interval while the stream is idle,
// where followers without a hub poll each on their own every PollInterval; and a commit
// whose tail is published wakes them all, each with exactly the new records.
func TestWatchedFollowersShareOnePoll(t *testing.T) {
	for _, b := range []storetest.Backend{{Name: "mem", New: storetest.Mem}, {Name: "file", New: storetest.File}} {
		t.Run(b.Name, func(t *testing.T) {
			seed := seed(t) // outside the bubble, whose clock starts in 2000
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 32))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				pc := &purposeCounter{n: map[string]int{}}
				store := objectstore.Instrument(b.New(t), pc)
				f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
				f.standard(rng, 3)
				hub := newHub(t, nil)
				readers := []*Reader{f.reader(func(c *Config) { c.Watch = hub }), f.reader(func(c *Config) { c.Watch = hub })}
				const followers = 40
				var outs []<-chan ReadBatch
				var errcs []<-chan error
				for i := range followers {
					s, err := readers[i%2].Open(ctx, ReadRequest{Start: AtTailOffset(0), Follow: true})
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					out, errc := collect(ctx, s)
					outs, errcs = append(outs, out), append(errcs, errc)
				}
				const idle = 30 * time.Second
				polls := pc.get("poll/get")
				time.Sleep(idle)
				polls = pc.get("poll/get") - polls
				cfg := hub.Config()
				want := 0
				for at, iv := time.Duration(0), cfg.MinInterval; at+iv <= idle; iv = min(2*iv, cfg.MaxInterval) {
					at += iv
					want++
				}
				t.Logf("%d followers idle for %v: %d manifest polls (one per follower every %v would be %d)",
					followers, idle, polls, DefaultConfig().PollInterval, followers*int(idle/DefaultConfig().PollInterval))
				if polls != want {
					t.Fatalf("%d polls, want %d (one per hub interval)", polls, want)
				}
				from := len(f.want)
				f.object([]batchfmt.Record{rec(f.want[from-1].ts+1, "live-a"), rec(f.want[from-1].ts+2, "live-b")})
				published := time.Now()
				hub.PublishTail(store, f.path, uint64(len(f.want)))
				for i := range followers {
					got := await(t, outs[i], errcs[i], len(f.want)-from)
					check(t, fmt.Sprintf("follower %d", i), got, f.want[from:])
				}
				if d := time.Since(published); d != 0 {
					t.Fatalf("followers woken %v after the published tail, want at once", d)
				}
				cancel()
				for i := range followers {
					if err := <-errcs[i]; !errors.Is(err, context.Canceled) {
						t.Fatalf("follower %d after cancel: %v", i, err)
					}
				}
			})
		})
	}
}

// TestWatchedFollowersSeeEveryRecordOnce: followers opened at random positions while a
// writer commits at random times, with the commits' manifests or tails published at once,
// late and out of order, or not at all, each see exactly the records from their start on, in order, none twice, none
// missing.
func TestWatchedFollowersSeeEveryRecordOnce(t *testing.T) {
	seed := seed(t)
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 33))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		store := objectstore.NewMemStore()
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		f.standard(rng, 2)
		hub := newHub(t, nil)
		r := f.reader(func(c *Config) { c.Watch = hub; c.ReadAheadDepth = 1 + rng.IntN(4) })

		type follower struct {
			from     int
			out      <-chan ReadBatch
			errc     <-chan error
			sessions *Session
		}
		var fs []follower
		open := func() {
			from := rng.IntN(len(f.want) + 1)
			s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(uint64(from)), Follow: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out, errc := collect(ctx, s)
			fs = append(fs, follower{from: from, out: out, errc: errc, sessions: s})
		}
		var late []func() // publishes held back
		commits := 15 + rng.IntN(20)
		for i := range commits {
			if rng.IntN(3) == 0 {
				open()
			}
			time.Sleep(time.Duration(rng.IntN(2500)) * time.Millisecond)
			var recs []batchfmt.Record
			for j := range 1 + rng.IntN(4) {
				recs = append(recs, rec(f.want[len(f.want)-1].ts+uint64(j), fmt.Sprintf("c%d-%d", i, j)))
			}
			f.object(recs)
			tail := uint64(len(f.want))
			snap, err := manifest.Open(store, f.path).Load(ctx) // as the committer wrote it
			if err != nil {
				t.Fatal(err)
			}
			publish := func() { hub.PublishTail(store, f.path, tail) }
			if rng.IntN(2) == 0 {
				publish = func() { hub.Publish(store, f.path, snap) }
			}
			switch rng.IntN(3) {
			case 0:
				publish()
			case 1:
				late = append(late, publish)
			} // else lost
			if len(late) > 0 && rng.IntN(2) == 0 {
				k := rng.IntN(len(late))
				late[k]()
				late = append(late[:k], late[k+1:]...)
			}
		}
		open()
		for i, fl := range fs {
			got := await(t, fl.out, fl.errc, len(f.want)-fl.from)
			check(t, fmt.Sprintf("follower %d from %d", i, fl.from), got, f.want[fl.from:])
		}
		t.Logf("%d commits, %d followers", commits, len(fs))
	})
}

// TestWatchedPollTakesWatcherView: a group member with a hub that polls at the tail without
// waiting takes the watcher's view, which costs no store request: a record committed since
// is not seen until the watcher learns of it, and is seen as soon as it has (here, from a
// published tail).
func TestWatchedPollTakesWatcherView(t *testing.T) {
	seed := seed(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(seed, 34))
		pc := &purposeCounter{n: map[string]int{}}
		store := objectstore.Instrument(objectstore.NewMemStore(), pc)
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		f.standard(rng, 2)
		hub := newHub(t, func(c *watch.Config) { c.MinInterval, c.MaxInterval = time.Hour, time.Hour })
		cfg := groupConfig(f, "g")
		cfg.Watch = hub
		c := openGroup(t, cfg)
		defer c.Close(ctx)
		var got []SequencedRecord
		for {
			b, err := c.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Records) == 0 {
				break
			}
			got = append(got, b.Records...)
		}
		check(t, "backlog", got, f.want)
		from := len(f.want)
		f.object([]batchfmt.Record{rec(f.want[from-1].ts+1, "new")})
		polls := pc.get("poll/get")
		if b, err := c.Poll(ctx); err != nil || len(b.Records) != 0 {
			t.Fatalf("poll before the watcher knows: %d records, %v; want none", len(b.Records), err)
		}
		if n := pc.get("poll/get") - polls; n != 0 {
			t.Fatalf("a poll at the tail made %d manifest reads, want 0", n)
		}
		hub.PublishTail(store, f.path, uint64(len(f.want)))
		synctest.Wait() // the watcher's read
		b, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "after the published tail", b.Records, f.want[from:])
	})
}
