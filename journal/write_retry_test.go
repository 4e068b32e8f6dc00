package journal_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
)

// lostPuts is a store whose puts never land and always report an unknown outcome.
type lostPuts struct {
	objectstore.Store
	puts atomic.Int64
}

func (s *lostPuts) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.puts.Add(1)
	return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, nil)
}

// TestWriteBacksOffWhenPutsAreLost: a write whose puts keep ending unknown and leave nothing
// puts again with growing delays until its context ends, not in a tight loop.
func TestWriteBacksOffWhenPutsAreLost(t *testing.T) {
	s := &lostPuts{Store: objectstore.NewMemStore()}
	h, obj := window(t, 3, 0, "x")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := journal.Write(ctx, s, h, obj); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write with lost puts: %v, want the context's deadline", err)
	}
	if n := s.puts.Load(); n < 2 || n > 10 {
		t.Fatalf("%d puts in 300 ms: want a few, with growing delays between them", n)
	}
}
