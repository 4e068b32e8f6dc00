package committer_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// gatedStore holds the first manifest write after armed is closed until gate is closed.
type gatedStore struct {
	objectstore.Store
	armed, held, gate chan struct{}
}

func (s *gatedStore) Put(ctx context.Context, key string, r io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasSuffix(key, "/manifest") {
		select {
		case <-s.armed:
			select {
			case s.held <- struct{}{}:
				<-s.gate
			default:
			}
		default:
		}
	}
	return s.Store.Put(ctx, key, r, size, cond)
}

// TestJournalTakeDuringCloseGivesTheRoleUp: a Commit that takes a stream's role while
// Close runs (its role write lands after Close's last checkpoints) does not leave the
// stream's manifest naming the closed committer's journal and role.
func TestJournalTakeDuringCloseGivesTheRoleUp(t *testing.T) {
	store := &gatedStore{Store: objectstore.NewMemStore(), armed: make(chan struct{}), held: make(chan struct{}, 1), gate: make(chan struct{})}
	createStream(t, store, "s/manifest")
	c := journalCommitter(t, store, "c1", nil)
	req := carriedRequest(t, store, "s/manifest", "one", 1)
	close(store.armed)
	answered := make(chan string, 1)
	go func() {
		resp := c.Commit(context.Background(), req)
		if resp.Error == nil {
			answered <- "committed"
			return
		}
		answered <- resp.Error.Code
	}()
	select {
	case <-store.held: // the role write is in flight
	case <-time.After(10 * time.Second):
		t.Fatal("no role write")
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	close(store.gate)
	t.Logf("the request was answered %s", <-answered)
	snap, err := manifest.Open(store, "s/manifest").Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Journal != nil || snap.State.Committer.ID != "" {
		t.Fatalf("after Close and the answer: journal %+v, role %+v", snap.State.Journal, snap.State.Committer)
	}
}
