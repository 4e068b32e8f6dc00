package gc

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// TestStalledProducer: a producer whose manifest writes fail for longer than the grace period
// (fault-injecting store, fake time) uploads its batch again under a new key once the upload
// is older than its commit deadline (half the grace period); the collector, running every
// minute with randomly failing deletes, deletes the abandoned uploads once they are older than
// the grace period by the store's clock, and never an object the manifest references. When
// the writes succeed again the producer commits, and the stream reads back whole.
func TestStalledProducer(t *testing.T) {
	sd := seed(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(sd, 11))
		fs := newFaultStore(objectstore.NewMemStore(), time.Time{})
		fs.realClock = true
		var stall atomic.Bool
		var mu sync.Mutex
		var uploads []string // batch keys in upload order
		fs.failPut = func(key string) bool { return stall.Load() && key == mpath }
		tried := map[string]bool{}
		fs.failDel = func(key string) bool { // the first delete of each key fails, later ones at random
			fail := !tried[key] || rng.IntN(3) == 0
			tried[key] = true
			return fail
		}
		fs.onPut = func(key string) {
			if ingest.Classify(key) == stream.KeyBatch {
				mu.Lock()
				uploads = append(uploads, key)
				mu.Unlock()
			}
		}
		s := newStream(t, fs, manifest.DefaultConfig(), func(c *producer.Config) {
			c.Now = time.Now
			c.CommitDeadline = 5 * time.Minute
		})
		for range 3 {
			s.object(2)
		}
		cfg := testConfig(time.Now)
		cfg.GracePeriod = 10 * time.Minute
		c, err := NewCollector(fs, cfg)
		if err != nil {
			t.Fatal(err)
		}

		stall.Store(true)
		mu.Lock()
		first := len(uploads)
		mu.Unlock()
		tk, err := s.p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("stalled")}}})
		if err != nil {
			t.Fatal(err)
		}
		flushed := make(chan error, 1)
		go func() { flushed <- s.p.Flush(ctx) }()

		var deletedTotal, errorsTotal int
		for minute := 1; minute <= 16; minute++ {
			time.Sleep(time.Minute)
			if minute == 13 {
				stall.Store(false)
			}
			rep, err := c.Pass(ctx, ingest)
			if err != nil {
				t.Fatalf("minute %d: %v", minute, err)
			}
			deletedTotal += rep.Deleted
			errorsTotal += rep.DeleteErrors
			// Nothing referenced was deleted.
			referenced := allReferenced(t, fs)
			for _, k := range fs.deleted() {
				if slices.Contains(referenced, k) {
					t.Fatalf("minute %d: referenced object %s was deleted", minute, k)
				}
			}
			checkIntact(t, fs)
		}
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
		ack, err := tk.Wait(ctx)
		if err != nil || ack.Start.SeqNum != 6 {
			t.Fatalf("stalled append: %+v %v", ack, err)
		}
		mu.Lock()
		stalled := append([]string(nil), uploads[first:]...)
		mu.Unlock()
		st := load(t, fs)
		committed := st.Entries[len(st.Entries)-1].Key
		t.Logf("uploads of the stalled batch: %d; committed %s; deleted %d (%d delete failures retried)", len(stalled), committed, deletedTotal, errorsTotal)
		if errorsTotal == 0 {
			t.Fatal("no delete failed: the retry path was not exercised")
		}
		if len(stalled) < 2 || committed == stalled[0] || !slices.Contains(stalled, committed) {
			t.Fatalf("the stalled batch was not uploaded again: uploads %v, committed %s", stalled, committed)
		}
		// The first upload, abandoned more than a grace period ago, is gone; no other object
		// (earlier entries) was deleted.
		if _, err := fs.Head(ctx, stalled[0]); err == nil {
			t.Fatalf("abandoned upload %s was not collected", stalled[0])
		}
		for _, k := range fs.deleted() {
			if !slices.Contains(stalled, k) || k == committed {
				t.Fatalf("deleted %s, which is not an abandoned upload", k)
			}
		}
		recs := checkIntact(t, fs)
		if len(recs) != 7 || string(recs[6].Body) != "stalled" {
			t.Fatalf("stream after the stall: %d records", len(recs))
		}
		if err := s.p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
