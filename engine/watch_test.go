package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// pollCounter counts the store's manifest polls.
type pollCounter struct {
	mu sync.Mutex
	n  int
}

func (c *pollCounter) ObserveOp(e objectstore.OpEvent) {
	if e.Purpose == objectstore.PurposePoll {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
}

func (c *pollCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestAppendWakesReadersWithoutPolls: the engine's readers of a stream share its watcher, and
// an append through the engine wakes them all with the manifest its producer wrote: no
// reader, and no watcher, reads the manifest for it.
func TestAppendWakesReadersWithoutPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pc := &pollCounter{}
		e := newEngine(t, objectstore.Instrument(objectstore.NewMemStore(), pc), nil)
		if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		const readers = 8
		got := make(chan consumer.ReadBatch, readers)
		for range readers {
			s, err := e.Open(ctx, "", "s", consumer.ReadRequest{Start: consumer.AtTailOffset(0), Follow: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			go func() {
				for {
					b, err := s.Next(ctx)
					if err != nil {
						return
					}
					got <- b
				}
			}()
		}
		synctest.Wait() // every reader waits at the tail
		for round := range 3 {
			before := pc.get()
			ack, err := e.Append(ctx, "", "s", records(2, fmt.Sprint(round)))
			if err != nil {
				t.Fatal(err)
			}
			for range readers {
				b := <-got
				if len(b.Records) != 2 || b.Records[0].SeqNum != ack.Start.SeqNum {
					t.Fatalf("round %d: a reader got %d records from %d, want 2 from %d", round, len(b.Records), b.Records[0].SeqNum, ack.Start.SeqNum)
				}
			}
			if n := pc.get() - before; n != 0 {
				t.Fatalf("round %d: %d manifest polls to wake %d readers of an append, want 0", round, n, readers)
			}
		}
	})
}
