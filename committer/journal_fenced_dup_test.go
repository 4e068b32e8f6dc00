package committer_test

import (
	"context"

	"testing"

	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestJournalFencedWindowKeepsADuplicateUnknown: a request that repeats a batch an earlier,
// durable window committed, and whose own window is then fenced, must not be answered "not
// committed" (wire.CodeRoleHeld): its repeated batch is in the stream. Only an unknown
// outcome (wire.CodeStorage) is true of it.
func TestJournalFencedWindowKeepsADuplicateUnknown(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	if resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "one", 1)); resp.Error != nil {
		t.Fatalf("first commit: %+v", resp.Error)
	}
	id := journalOf(t, store)
	if _, err := journal.Fence(context.Background(), store, id, 0, journal.Header{Nonce: [16]byte{7}}, nil); err != nil {
		t.Fatal(err)
	}
	// The producer retries batch 1 (its answer was lost) together with batch 2.
	req := carriedRequest(t, store, "s/manifest", "one", 1)
	req.Batches = append(req.Batches, carriedRequest(t, store, "s/manifest", "two", 2).Batches...)
	resp := c.Commit(context.Background(), req)
	if resp.Error != nil && resp.Error.Code != wire.CodeStorage {
		t.Fatalf("a request with a committed batch was answered %s (%s): that says nothing of it was committed", resp.Error.Code, resp.Error.Message)
	}
	snap, view, err := manifest.Open(store, "s/manifest").LoadView(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if row, ok := view.Producer("raw-producer"); !ok || row.LastBatch < 1 {
		t.Fatalf("batch 1 is not in the stream (row %+v, journal %+v)", row, snap.State.Journal)
	}
}
