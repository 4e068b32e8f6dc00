package engine

import (
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// TestAPI runs the S2 API conformance suite (every route, sessions over HTTP/1.1 and h2c, the
// curl lines of S2's documentation, and S2's TypeScript SDK) against the engine on a memory store.
func TestAPI(t *testing.T) {
	servertest.Run(t, func(t testing.TB) server.Backend {
		return newEngine(t, objectstore.NewMemStore(), nil).S2()
	})
}

// TestAPIOnS3 runs the same suite on the real S3-compatible server.
func TestAPIOnS3(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	servertest.Run(t, func(t testing.TB) server.Backend {
		return newEngine(t, storetest.S3(t), nil).S2()
	})
}
