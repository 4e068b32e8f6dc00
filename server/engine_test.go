package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/server"
)

// newEngineBackend is the backend the server's tests run on: the real engine on a fresh
// memory store, closed by t.Cleanup. The server's contract is tested against what it serves
// in production, not against a second implementation of S2's semantics.
func newEngineBackend(t testing.TB) server.Backend {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.Store = objectstore.NewMemStore()
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e.S2()
}
