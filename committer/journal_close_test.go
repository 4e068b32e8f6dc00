package committer_test

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// holdingStore holds every manifest write, while hold is set, until its context ends; the
// write then fails without effect.
type holdingStore struct {
	objectstore.Store
	hold atomic.Bool
	held chan struct{} // gets a value when a write is held
}

func (s *holdingStore) Put(ctx context.Context, key string, r io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasSuffix(key, "/manifest") && s.hold.Load() {
		select {
		case s.held <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return objectstore.ObjectInfo{}, ctx.Err()
	}
	return s.Store.Put(ctx, key, r, size, cond)
}

// TestJournalCloseDuringCheckpointGivesUpTheRole: a checkpoint that Close interrupts does
// not keep Close from clearing the stream's pointer and giving its role up, as it does for
// every other stream it holds.
func TestJournalCloseDuringCheckpointGivesUpTheRole(t *testing.T) {
	store := &holdingStore{Store: objectstore.NewMemStore(), held: make(chan struct{}, 1)}
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	if resp := c.Commit(context.Background(), carriedRequest(t, store, "s/manifest", "one", 1)); resp.Error != nil {
		t.Fatalf("commit: %+v", resp.Error)
	}
	store.hold.Store(true)
	select {
	case <-store.held: // the checkpoint's manifest write is in flight
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint within 10 s")
	}
	store.hold.Store(false)
	if err := c.Close(context.Background()); err != nil {
		t.Logf("Close: %v", err)
	}
	snap, err := manifest.Open(store, "s/manifest").Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Journal != nil || snap.State.Committer.ID != "" {
		t.Fatalf("after Close: journal %+v, role %+v", snap.State.Journal, snap.State.Committer)
	}
}
