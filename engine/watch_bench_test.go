package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

type opCount struct{ n atomic.Int64 }

func (c *opCount) ObserveOp(objectstore.OpEvent) { c.n.Add(1) }

// BenchmarkIdleReaders opens one live read session (what an SSE or S2S read session holds)
// on each of 200 idle streams of an engine on the file store and reports the store requests
// per second they cost over 3 s, after a 2 s warm-up: one watcher poll per stream per
// second (the hub's MaxInterval), where each session polled every 100 ms before.
func BenchmarkIdleReaders(b *testing.B) {
	const streams = 200
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		oc := &opCount{}
		e := newEngine(b, objectstore.Instrument(storetest.File(b), oc), nil)
		for i := range streams {
			name := fmt.Sprintf("s%d", i)
			if _, err := e.CreateStream(ctx, "", name, manifest.DefaultConfig()); err != nil {
				b.Fatal(err)
			}
			s, err := e.Open(ctx, "", name, consumer.ReadRequest{Start: consumer.AtTailOffset(0), Follow: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			go s.Next(ctx) // waits at the tail until ctx ends
		}
		time.Sleep(2 * time.Second)
		n0, t0 := oc.n.Load(), time.Now()
		time.Sleep(3 * time.Second)
		rate := float64(oc.n.Load()-n0) / time.Since(t0).Seconds()
		cancel()
		b.ReportMetric(rate, "req/s")
		b.ReportMetric(rate/streams, "req/s/stream")
	}
	b.ReportMetric(0, "ns/op")
}
