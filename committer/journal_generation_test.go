package committer_test

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// TestJournalRecreatedStreamCommitsAtOnce: a stream deleted and created again while the
// committer holds it takes the new generation's requests at once, not after the old
// generation's role is dropped by a failed checkpoint (up to half a lease later): the held
// state's generation is not the manifest's any more.
func TestJournalRecreatedStreamCommitsAtOnce(t *testing.T) {
	store := objectstore.NewMemStore()
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	if resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "one", 1)); resp.Error != nil {
		t.Fatalf("commit: %+v", resp.Error)
	}
	if err := store.Delete(context.Background(), "s/manifest"); err != nil {
		t.Fatal(err)
	}
	createStream(t, store, "s/manifest")
	resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "two", 1))
	if resp.Error != nil {
		t.Fatalf("commit to the stream created again: %s: %s", resp.Error.Code, resp.Error.Message)
	}
}
