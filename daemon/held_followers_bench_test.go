package daemon_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/bench"
	"github.com/sluice-dev/sluice/objectstore"
)

// BenchmarkIdleFollowersOfManyStreams: one live SSE reader on each of many idle streams of
// one daemon (SLUICE_BENCH_STREAMS, default 1,000), on the memory store behind 15 ms each
// way, without (manifest) and with --journal (journal: the daemon holds the followed
// streams' roles and hands their commits to the readers). Reported: the daemon's store
// requests a second while every stream is idle, and the polls among them. The setup (streams created and written once, readers connected, and 40 s
// for the streams' first checkpoints) is not timed; the idle window is 130 s, longer than
// the held streams' poll interval (watch.Config.HeldInterval, 2 min); b.N is ignored.
func BenchmarkIdleFollowersOfManyStreams(b *testing.B) {
	streams := 1000
	if v := os.Getenv("SLUICE_BENCH_STREAMS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("SLUICE_BENCH_STREAMS=%q is not a positive number", v)
		}
		streams = n
	}
	for _, mode := range []string{"manifest", "journal"} {
		b.Run(mode, func(b *testing.B) {
			count := &purposes{n: map[objectstore.Purpose]int{}}
			store := objectstore.Instrument(bench.DelayStore(objectstore.NewMemStore(), 15*time.Millisecond), count)
			cfg := testConfig(store)
			cfg.Journal, cfg.GC, cfg.LagInterval = mode == "journal", false, 0
			r := start(b, cfg)
			defer r.stop(b)
			r.create(b, "idle-basin", "s0")
			parallel(b, streams, func(i int) {
				if i > 0 {
					r.createStream(b, "idle-basin", fmt.Sprintf("s%d", i))
				}
				r.appendOne(b, "idle-basin", fmt.Sprintf("s%d", i), fmt.Sprintf("first-%d", i))
			})
			follows := make([]<-chan string, streams)
			parallel(b, streams, func(i int) { follows[i] = r.sseFollow(b, "idle-basin", fmt.Sprintf("s%d", i)) })
			parallel(b, streams, func(i int) { waitFor(b, follows[i], fmt.Sprintf("first-%d", i), time.Minute) })
			time.Sleep(40 * time.Second)
			total0, polls0 := count.total(), count.get(objectstore.PurposePoll)
			const measured = 130 * time.Second
			time.Sleep(measured)
			secs := measured.Seconds()
			b.ReportMetric(float64(count.total()-total0)/secs, "req/s-idle")
			b.ReportMetric(float64(count.get(objectstore.PurposePoll)-polls0)/secs, "polls/s-idle")
			b.ReportMetric(float64(streams), "streams")
		})
	}
}

// parallel runs fn(0..n-1) on 32 goroutines.
func parallel(tb testing.TB, n int, fn func(i int)) {
	tb.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
