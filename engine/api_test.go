package engine

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// TestAPI runs the S2 API conformance suite (every route, sessions over HTTP/1.1 and h2c, the
// seeds' curl lines, and S2's TypeScript SDK) against the engine on a memory store.
func TestAPI(t *testing.T) {
	servertest.Run(t, func(t testing.TB) server.Backend {
		return newTestEngine(t, objectstore.NewMemStore()).S2()
	})
}

// TestAPIOnS3 runs the same suite on the real S3-compatible server.
func TestAPIOnS3(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	servertest.Run(t, func(t testing.TB) server.Backend {
		return newTestEngine(t, storetest.S3(t)).S2()
	})
}

func newTestEngine(t testing.TB, store objectstore.Store) *Engine {
	cfg := DefaultConfig()
	cfg.Store = store
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}
