package committer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestJournalCheckpointBoundsTheProducerTable: the producer table of a manifest written by
// journal checkpoints stays within manifest.MaxProducers, as a direct writer's does: a
// fold only raises rows, so a checkpoint that never prunes lets the table grow with every
// producer that ever committed.
func TestJournalCheckpointBoundsTheProducerTable(t *testing.T) {
	const producers = manifest.MaxProducers + 200
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	for i := 0; i < producers; i++ {
		req := carriedRequest(t, store, "s/manifest", fmt.Sprint(i), 1)
		req.ProducerID = fmt.Sprintf("p%05d", i)
		if resp := c.Commit(context.Background(), req); resp.Error != nil {
			t.Fatalf("commit %d: %+v", i, resp.Error)
		}
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap, err := manifest.Open(store, "s/manifest").Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Journal != nil {
		t.Fatalf("journal %+v after Close", snap.State.Journal)
	}
	if n := len(snap.State.Producers); n > manifest.MaxProducers {
		t.Fatalf("the manifest holds %d producer rows, more than %d", n, manifest.MaxProducers)
	}
}
