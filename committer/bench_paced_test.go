package committer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// BenchmarkPacedStore runs four producers sharing 1,000 records/s of 1 KiB through one
// committer on a store with a 30 ms round trip, first with no write limit (as S3 at this
// rate), then with one manifest write a second allowed (as GCS; a faster write is refused
// as throttled). It reports acked and failed records, the ack p50/p99, manifest writes a
// second, throttled writes, and p99 against the unlimited run's.
//
//	go test -run '^$' -bench PacedStore -benchtime 1x ./committer
func BenchmarkPacedStore(b *testing.B) {
	const rate, producers, rtt, dur = 1000, 4, 30 * time.Millisecond, 8 * time.Second
	var base float64
	for _, limit := range []float64{0, 1} {
		b.Run(fmt.Sprintf("writes_per_s=%v", limit), func(b *testing.B) {
			for range b.N {
				ctx := context.Background()
				mem := objectstore.NewMemStore()
				if _, err := manifest.Open(mem, path).Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
					b.Fatal(err)
				}
				store := &limitedStore{Store: &delayStore{Store: mem, rtt: rtt}, perSecond: limit, enforce: limit > 0}
				cfg := committer.DefaultConfig()
				cfg.Store, cfg.ID = store, "bench"
				_, srv := serveCommitter(b, cfg, nil)
				var mu sync.Mutex
				var lat []float64
				var failed atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				for range producers {
					wg.Go(func() {
						pcfg := producer.DefaultConfig()
						pcfg.ObjectStore, pcfg.Stream = store, stream.MustNew(path, "s/data")
						pcfg.Committer.URL = srv.URL
						p, err := producer.New(ctx, pcfg)
						if err != nil {
							b.Error(err)
							return
						}
						defer p.Close(ctx)
						mine, err := submitLoad(ctx, p, float64(rate)/producers, start, dur)
						if err != nil {
							b.Error(err)
						}
						failed.Add(int64(float64(rate)/producers*dur.Seconds()) - int64(len(mine)))
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				slices.Sort(lat)
				if len(lat) == 0 {
					b.Fatal("nothing acknowledged")
				}
				p99 := lat[len(lat)*99/100]
				if limit == 0 {
					base = p99
				}
				_, writes := store.closestWrites()
				b.ReportMetric(float64(len(lat)), "acked")
				b.ReportMetric(float64(max(failed.Load(), 0)), "failed")
				b.ReportMetric(lat[len(lat)/2], "ack_p50_ms")
				b.ReportMetric(p99, "ack_p99_ms")
				b.ReportMetric(float64(writes)/elapsed.Seconds(), "manifest_writes/s")
				b.ReportMetric(float64(store.throttled), "throttled")
				b.ReportMetric(p99/base, "p99_vs_unlimited")
			}
		})
	}
}
