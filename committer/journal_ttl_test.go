package committer_test

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// losingStore loses every journal write while lose is set: it reports an unknown outcome
// and writes nothing, as a PUT that times out before it reaches the store.
type losingStore struct {
	objectstore.Store
	lose atomic.Bool
	lost atomic.Int64
}

func (s *losingStore) Put(ctx context.Context, key string, r io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasPrefix(key, journal.Root) && s.lose.Load() {
		s.lost.Add(1)
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, context.DeadlineExceeded)
	}
	return s.Store.Put(ctx, key, r, size, cond)
}

// TestJournalWindowRetriesEndWithinRequestTTL: a window whose writes keep ending with an
// unknown outcome (and nothing written) is not written again once its requests are older
// than RequestTTL: they are answered (outcome unknown), as the stream loop does, so that no
// window lands long after its producers sent it (their batch objects must not outlive the
// collector's grace period unreferenced) and no caller waits for ever.
func TestJournalWindowRetriesEndWithinRequestTTL(t *testing.T) {
	store := &losingStore{Store: objectstore.NewMemStore()}
	createStream(t, store, "s/manifest")
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL = store, "c1", "http://c1.test"
	cfg.Journal = true
	cfg.RequestTTL = 200 * time.Millisecond
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	req := carriedRequest(t, store, "s/manifest", "one", 1)
	store.lose.Store(true)
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
	case code := <-answered:
		t.Logf("answered %s after %d lost writes", code, store.lost.Load())
	case <-time.After(5 * time.Second):
		store.lose.Store(false)
		t.Fatalf("not answered 5 s after it arrived (RequestTTL %v): the window was written %d times", cfg.RequestTTL, store.lost.Load())
	}
}
