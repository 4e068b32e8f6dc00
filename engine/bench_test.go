package engine

import (
	"os"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// The API benchmarks on the real engine: appends and reads through the engine itself
// ("library") beside the same work over HTTP as JSON and protobuf, in one run, per store.
//
//	go test ./engine -run '^$' -bench . -benchtime 2s

func benchStores(b *testing.B, fn func(b *testing.B, f servertest.Factory)) {
	b.Run("mem", func(b *testing.B) {
		fn(b, func(t testing.TB) server.Backend { return newEngine(t, objectstore.NewMemStore(), nil).S2() })
	})
	b.Run("file", func(b *testing.B) {
		fn(b, func(t testing.TB) server.Backend {
			s, err := storeurl.Open(t.Context(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return newEngine(t, s, nil).S2()
		})
	})
	if os.Getenv("SLUICE_TEST_S3_URL") != "" {
		b.Run("s3", func(b *testing.B) {
			fn(b, func(t testing.TB) server.Backend { return newEngine(t, storetest.S3(t), nil).S2() })
		})
	}
}

func BenchmarkAPIAppend(b *testing.B) { benchStores(b, servertest.BenchAppend) }
func BenchmarkAPIRead(b *testing.B)   { benchStores(b, servertest.BenchRead) }
