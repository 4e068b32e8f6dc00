package consumer

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// BenchmarkIdleFollowers runs live followers on idle streams of the file store, first each
// polling on its own (no hub: the path before package watch), then sharing one hub, and
// reports the store requests per second of each after a warm-up (poll_req/s, watch_req/s)
// and their ratio. The stream count and followers per stream are in the name.
func BenchmarkIdleFollowers(b *testing.B) {
	for _, tc := range []struct{ streams, perStream int }{{100, 1}, {10, 10}} {
		b.Run(fmt.Sprintf("streams=%d/followers=%d", tc.streams, tc.perStream), func(b *testing.B) {
			for b.Loop() {
				old := idleRequestRate(b, tc.streams, tc.perStream, false)
				shared := idleRequestRate(b, tc.streams, tc.perStream, true)
				b.ReportMetric(old, "poll_req/s")
				b.ReportMetric(shared, "watch_req/s")
				b.ReportMetric(old/max(shared, 1e-9), "ratio")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// idleRequestRate opens perStream followers on each of streams empty streams and returns the
// store requests per second they cost over a 3 s window, after a 2 s warm-up (long enough
// for the watchers' intervals to reach their maximum).
func idleRequestRate(b *testing.B, streams, perStream int, shared bool) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc := &purposeCounter{n: map[string]int{}}
	store := objectstore.Instrument(storetest.File(b), pc)
	var hub *watch.Hub
	if shared {
		hub = newHub(b, nil)
		defer hub.Close()
	}
	var sessions []*Session
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	for i := range streams {
		path := fmt.Sprintf("s%d/manifest", i)
		if _, err := manifest.Open(store, path).Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.ObjectStore, cfg.Stream, cfg.Watch = store, stream.MustNew(path, fmt.Sprintf("s%d/data", i)), hub
		r, err := NewReader(cfg)
		if err != nil {
			b.Fatal(err)
		}
		for range perStream {
			s, err := r.Open(ctx, ReadRequest{Start: AtTailOffset(0), Follow: true})
			if err != nil {
				b.Fatal(err)
			}
			sessions = append(sessions, s)
			go s.Next(ctx) // waits at the tail until ctx ends
		}
	}
	total := func() int {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		n := 0
		for _, v := range pc.n {
			n += v
		}
		return n
	}
	time.Sleep(2 * time.Second)
	n0, t0 := total(), time.Now()
	time.Sleep(3 * time.Second)
	return float64(total()-n0) / time.Since(t0).Seconds()
}

// BenchmarkAppendToDeliveryWatched measures the time from Append to the delivery of the
// record to a follower sharing a hub, on the file store with a 10 ms flush interval, appends
// paced 2 ms apart: with the producer writing through watch.PublishingStore (as in the
// daemon: no read to wake the follower), with every acknowledged tail published to the hub
// (one shared poll per commit), and with neither (a follower in another process than the
// writer: the hub's polls alone). Reports p50 and p99 in ms, and manifest polls per second.
func BenchmarkAppendToDeliveryWatched(b *testing.B) {
	for _, mode := range []string{"store", "tail", "polls"} {
		b.Run(mode, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pc := &purposeCounter{n: map[string]int{}}
			store := objectstore.Instrument(storetest.File(b), pc)
			hub := newHub(b, nil)
			pcfg := producer.DefaultConfig()
			pcfg.ObjectStore = store
			if mode == "store" {
				pcfg.ObjectStore = watch.PublishingStore(store, hub)
			}
			pcfg.FlushInterval = 10 * time.Millisecond
			p, err := producer.New(ctx, pcfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())
			cfg := DefaultConfig()
			cfg.ObjectStore, cfg.Watch = store, hub
			r, err := NewReader(cfg)
			if err != nil {
				b.Fatal(err)
			}
			s, err := r.Open(ctx, ReadRequest{Start: AtTailOffset(0), Follow: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var onAck func(producer.Ack)
			if mode == "tail" {
				onAck = func(a producer.Ack) { hub.PublishTail(store, cfg.Stream.ManifestKey(), a.Tail.SeqNum) }
			}
			start := time.Now()
			polls0 := pc.get("poll/get")
			lat := measureDelivery(ctx, b, p, s, onAck)
			b.ReportMetric(float64(pc.get("poll/get")-polls0)/time.Since(start).Seconds(), "polls/s")
			slices.Sort(lat)
			pct := func(q float64) float64 {
				return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / float64(time.Millisecond)
			}
			b.ReportMetric(pct(0.50), "p50_ms")
			b.ReportMetric(pct(0.99), "p99_ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// measureDelivery appends one record per b.Loop iteration, 2 ms apart, calls onAck (if set)
// with each ack, and returns each record's time from Append to its delivery by s.
func measureDelivery(ctx context.Context, b *testing.B, p *producer.Producer, s *Session, onAck func(producer.Ack)) []time.Duration {
	var mu sync.Mutex
	sent := map[uint64]time.Time{}
	var lat []time.Duration
	var want uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			bt, err := s.Next(ctx)
			if err != nil {
				return
			}
			now := time.Now()
			mu.Lock()
			for _, rec := range bt.Records {
				lat = append(lat, now.Sub(sent[binary.BigEndian.Uint64(rec.Body)]))
			}
			n, w := uint64(len(lat)), want
			mu.Unlock()
			if w > 0 && n >= w {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	pace := time.NewTicker(2 * time.Millisecond)
	defer pace.Stop()
	id := uint64(0)
	for b.Loop() {
		<-pace.C
		body := binary.BigEndian.AppendUint64(nil, id)
		mu.Lock()
		sent[id] = time.Now()
		mu.Unlock()
		tk, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: body}}})
		if err != nil {
			b.Fatal(err)
		}
		id++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ack, err := tk.Wait(ctx); err == nil && onAck != nil {
				onAck(ack)
			}
		}()
	}
	mu.Lock()
	want = id
	n := uint64(len(lat))
	mu.Unlock()
	if n < want {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Fatalf("delivered %d of %d", n, want)
		}
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(lat)
}
