package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/internal/journaltest"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// TestJournalTailAndReadsSeeWindows: the engine's tail and reads of a stream whose commits
// are partly in journal windows (ranged and whole entries) show every committed record.
func TestJournalTailAndReadsSeeWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	ctx := context.Background()
	store := objectstore.NewMemStore()
	e := newEngine(t, store, nil)
	loc, err := stream.Locate("", "journaled")
	if err != nil {
		t.Fatal(err)
	}
	s := journaltest.New(t, store, loc.ManifestKey(), journal.ID(rng.Uint64()))
	s.Direct([]string{"d0"})
	for w := range 3 {
		s.Window(journaltest.RandomBatches(rng, fmt.Sprintf("w%d", w))...)
	}
	s.CheckpointBefore(s.Next - 1)
	s.Window(journaltest.Batch{Bodies: []string{"last"}})
	tail, err := e.Tail(ctx, "", "journaled")
	if err != nil || tail != s.Full.Tail {
		t.Fatalf("Tail = %+v, %v; want %+v", tail, err, s.Full.Tail)
	}
	sess, err := e.Open(ctx, "", "journaled", consumer.ReadRequest{Start: consumer.AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var got []consumer.SequencedRecord
	for {
		b, err := sess.Next(ctx)
		got = append(got, b.Records...)
		if errors.Is(err, consumer.ErrDone) {
			break
		}
		if err != nil {
			t.Fatalf("read after %d records: %v", len(got), err)
		}
	}
	if len(got) != len(s.Want) {
		t.Fatalf("read %d records, want %d", len(got), len(s.Want))
	}
	for i, w := range s.Want {
		if g := got[i]; g.SeqNum != w.Seq || g.Timestamp != w.TS || string(g.Body) != w.Body {
			t.Fatalf("record %d is (%d, %d, %q), want %+v", i, g.SeqNum, g.Timestamp, g.Body, w)
		}
	}
}
