package memtest_test

import (
	"testing"

	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/memtest"
	"github.com/sluice-dev/sluice/server/servertest"
)

// TestServerConformance runs the API server's conformance suite over the reference fixture.
func TestServerConformance(t *testing.T) {
	servertest.Run(t, func(testing.TB) server.Backend { return memtest.New(nil) })
}
