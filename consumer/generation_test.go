package consumer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

func appendRecords(t *testing.T, store objectstore.Store, n int) [16]byte {
	t.Helper()
	ctx := context.Background()
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.FlushInterval = time.Millisecond
	p, err := producer.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(fmt.Sprint("r", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := manifest.Open(store, "ingest/manifest").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return snap.State.Generation
}

// TestCheckpointNotWrittenIntoNewGeneration: a group member of a stream that was deleted and
// created again (a new generation) must not write its old acknowledgements as the checkpoint
// of the new stream's group of the same name, though its epoch number equals the new group's
// (a new stream's epochs start over; the test has members join until the epochs match): the
// new group would skip records it never read. Consumer.flush compares the
// generation with the one the member joined (manifest.Handle.Update checks it only across its
// own attempts), and the member is out for good.
func TestCheckpointNotWrittenIntoNewGeneration(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	gen1 := appendRecords(t, store, 5)

	cfg := DefaultGroupConfig()
	cfg.ObjectStore = store
	cfg.Group = "g"
	cfg.AckInterval = time.Hour
	cfg.PollInterval = time.Millisecond
	a, err := Open(ctx, cfg, GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	got := 0
	for got < 5 {
		b, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(b.Records)
	}
	if err := a.AckThrough(4); err != nil {
		t.Fatal(err)
	}

	// The stream is deleted and created again, with more records than the old one had.
	if err := store.Delete(ctx, "ingest/manifest"); err != nil {
		t.Fatal(err)
	}
	gen2 := appendRecords(t, store, 1)
	if gen1 == gen2 {
		t.Fatal("same generation")
	}
	// New members join group "g" of the new stream (checkpoint 0), one after the other, until
	// one has the old member's epoch: only the generation tells the two apart.
	for {
		b, err := Open(ctx, cfg, GroupOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if acked, _ := b.Checkpoint(); acked != 0 {
			t.Fatalf("new stream's group starts at %d", acked)
		}
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if b.Epoch() > a.Epoch() {
			t.Fatalf("setup: a member of the new stream's group got epoch %d, past the old member's %d", b.Epoch(), a.Epoch())
		}
		if b.Epoch() == a.Epoch() {
			break
		}
	}
	if gen := appendRecords(t, store, 9); gen != gen2 {
		t.Fatal("the second append created another stream")
	}

	ferr := a.Flush(ctx)
	if g := groupState(t, store, "g"); g.Checkpoint != 0 {
		t.Fatalf("the old stream's member wrote checkpoint %d into the new stream's group (flush: %v); its records 0..%d were never read by the new group", g.Checkpoint, ferr, g.Checkpoint-1)
	}
	if !errors.Is(ferr, manifest.ErrGenerationChanged) {
		t.Fatalf("flush of a member of a deleted stream: %v, want manifest.ErrGenerationChanged", ferr)
	}
	if err := a.Ack(5); !errors.Is(err, manifest.ErrGenerationChanged) {
		t.Fatalf("ack after that: %v, want manifest.ErrGenerationChanged", err)
	}
}
