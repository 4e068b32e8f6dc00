package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// once501Store refuses the next n batch uploads with ErrConditionsUnsupported, then lets
// them through: a store whose refusal is not for good.
type once501Store struct {
	objectstore.Store
	n atomic.Int32
}

func (s *once501Store) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.Contains(key, "/data/") && s.n.Add(-1) >= 0 {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrConditionsUnsupported, errors.New("api error NotImplemented: 501"))
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// A producer that failed for good (here on one refused upload) is replaced: the next
// append opens a fresh one and goes through once the store does. (The engine kept the
// failed producer cached, and every append failed with its error until the stream was idle
// for IdleTimeout, which a retrying client never let happen.)
func TestFailedProducerIsReplaced(t *testing.T) {
	ctx := context.Background()
	store := &once501Store{Store: objectstore.NewMemStore()}
	e := newEngine(t, store, func(c *Config) {
		c.Producer.Backoff = manifest.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 2}
	})
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	store.n.Store(1)
	if _, err := e.Append(ctx, "", "s", records(1, "a")); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
		t.Fatalf("first append: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := e.Append(ctx, "", "s", records(1, "b")); err != nil {
			t.Fatalf("append %d after the store answered normally again: %v (s2 maps it to %v)", i, err, apiError(err))
		}
	}
}
