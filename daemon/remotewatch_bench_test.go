package daemon_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// BenchmarkCrossProcessFollow: a library follower in another process (its own store handle
// and hub) follows a stream whose role a daemon holds, on the file store, through the
// committer's watch (watch; watch-journal with the daemon's --journal) or by polling the
// store on the default intervals (poll, the baseline). Reported: append→delivery latency p50/p99 (and the append's own ack, which it includes, and what follows the ack) of one record appended through the
// daemon's API after the stream was idle for idle ms (so the poll follower has backed off
// as an idle follower has), and the store requests a second of the follower and of the
// daemon while the stream is idle (2 s measured).
func BenchmarkCrossProcessFollow(b *testing.B) {
	const idle = 300 * time.Millisecond
	for _, mode := range []string{"watch", "poll", "watch-journal"} {
		b.Run(mode, func(b *testing.B) {
			dc := &purposes{n: map[objectstore.Purpose]int{}}
			base := storetest.File(b)
			cfg := testConfig(objectstore.Instrument(base, dc))
			cfg.Journal = mode == "watch-journal"
			r := start(b, cfg)
			defer r.stop(b)
			r.create(b, "watch-basin", "events")
			r.appendOne(b, "watch-basin", "events", "first")
			f := followFromOtherProcess(b, base, "watch-basin", "events", mode != "poll", nil)
			// The follower waits at the tail all along, as a live reader does.
			delivered := make(chan string, 1)
			go func() {
				defer close(delivered)
				for {
					got, err := f.sess.Next(b.Context())
					if err != nil {
						return
					}
					for _, rec := range got.Records {
						delivered <- string(rec.Body)
					}
				}
			}()

			// Idle cost, after the watcher's backoff has settled.
			time.Sleep(2 * time.Second)
			f0, d0 := f.c.total(), dc.total()
			time.Sleep(2 * time.Second)
			followerIdle, daemonIdle := float64(f.c.total()-f0)/2, float64(dc.total()-d0)/2

			lat, acks, after := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				time.Sleep(idle)
				b.StartTimer()
				body := fmt.Sprintf("rec-%d", i)
				t0 := time.Now()
				r.appendOne(b, "watch-basin", "events", body)
				acks = append(acks, time.Since(t0))
				got := <-delivered
				lat = append(lat, time.Since(t0))
				after = append(after, lat[len(lat)-1]-acks[len(acks)-1])
				if got != body {
					b.Fatalf("delivered %q, want %q", got, body)
				}
			}
			b.StopTimer()
			f.sess.Close()
			for range delivered {
			}
			slices.Sort(lat)
			slices.Sort(acks)
			slices.Sort(after)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(acks[len(acks)/2].Microseconds())/1000, "ack-p50-ms")
			b.ReportMetric(float64(acks[len(acks)*99/100].Microseconds())/1000, "ack-p99-ms")
			b.ReportMetric(float64(after[len(after)/2].Microseconds())/1000, "after-ack-p50-ms")
			b.ReportMetric(float64(after[len(after)*99/100].Microseconds())/1000, "after-ack-p99-ms")
			b.ReportMetric(followerIdle, "follower-req/s-idle")
			b.ReportMetric(daemonIdle, "daemon-req/s-idle")
		})
	}
}
