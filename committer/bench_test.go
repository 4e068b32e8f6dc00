package committer_test

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// delayStore adds a round trip of rtt to every request, as a cloud's object store has.
type delayStore struct {
	objectstore.Store
	rtt  time.Duration
	puts *durations // if set, records each Put's time, the delay included
}

// durations collects latencies in ms from several goroutines.
type durations struct {
	mu sync.Mutex
	ms []float64
}

func (d *durations) add(since time.Time) {
	d.mu.Lock()
	d.ms = append(d.ms, float64(time.Since(since).Microseconds())/1000)
	d.mu.Unlock()
}

func (d *delayStore) wait(ctx context.Context) error {
	t := time.NewTimer(d.rtt)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *delayStore) Get(ctx context.Context, key string, o objectstore.GetOptions) (*objectstore.Object, error) {
	if err := d.wait(ctx); err != nil {
		return nil, err
	}
	return d.Store.Get(ctx, key, o)
}

func (d *delayStore) Put(ctx context.Context, key string, body io.Reader, size int64, c objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if d.puts != nil {
		defer d.puts.add(time.Now())
	}
	if err := d.wait(ctx); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	return d.Store.Put(ctx, key, body, size, c)
}

// BenchmarkManyProducers runs N producers (1, 4, 16, 64) on one stream, sharing 10,000
// records/s of 1 KiB by per-record Submit with the default config, on a store with a 30 ms
// round trip (the memory store, or the S3 server of SLUICE_TEST_S3_URL under a prefix of its
// own), committing directly and through one committer. It reports records/s and the
// ack latency's p50 and p99, and p99 against N=1's of the same mode (p99_vs_1).
//
//	go test -run '^$' -bench ManyProducers -benchtime 1x ./committer
func BenchmarkManyProducers(b *testing.B) {
	const rate, rtt, dur = 10_000, 30 * time.Millisecond, 4 * time.Second
	for _, mode := range []string{"direct", "committer"} {
		var base float64
		for _, n := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("%s/producers=%d", mode, n), func(b *testing.B) {
				for range b.N {
					recs, lat := runLoad(b, mode == "committer", n, 0, rate, rtt, dur)
					p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
					if n == 1 {
						base = p99
					}
					b.ReportMetric(float64(recs)/dur.Seconds(), "records/s")
					b.ReportMetric(p50, "ack_p50_ms")
					b.ReportMetric(p99, "ack_p99_ms")
					b.ReportMetric(p99/base, "p99_vs_1")
				}
			})
		}
	}
}

// BenchmarkGroupsAcking runs one producer at 10,000 records/s of 1 KiB while 0 or 2
// consumer groups follow the stream and acknowledge (every 100 ms), committing directly and
// through a committer (which then also writes the groups' checkpoints). It reports the
// producer's ack p99 against the same mode's without groups (p99_vs_0).
//
//	go test -run '^$' -bench GroupsAcking -benchtime 1x ./committer
func BenchmarkGroupsAcking(b *testing.B) {
	const rate, rtt, dur = 10_000, 30 * time.Millisecond, 4 * time.Second
	for _, mode := range []string{"direct", "committer"} {
		var base float64
		for _, groups := range []int{0, 2} {
			b.Run(fmt.Sprintf("%s/groups=%d", mode, groups), func(b *testing.B) {
				for range b.N {
					_, lat := runLoad(b, mode == "committer", 1, groups, rate, rtt, dur)
					p99 := lat[len(lat)*99/100]
					if groups == 0 {
						base = p99
					}
					b.ReportMetric(lat[len(lat)/2], "ack_p50_ms")
					b.ReportMetric(p99, "ack_p99_ms")
					b.ReportMetric(p99/base, "p99_vs_0")
				}
			})
		}
	}
}

// runLoad submits rate records/s shared by n producers for dur, while groups consumer
// groups follow and acknowledge, and returns how many records were acknowledged and their
// ack latencies in ms, sorted.
func runLoad(b *testing.B, viaCommitter bool, n, groups, rate int, rtt, dur time.Duration) (int, []float64) {
	ctx := context.Background()
	var inner objectstore.Store = objectstore.NewMemStore()
	if raw := os.Getenv("SLUICE_TEST_S3_URL"); raw != "" {
		s, err := storeurl.Open(ctx, prefixed(b, raw, fmt.Sprintf("bench-%d", time.Now().UnixNano())))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		inner = s
	}
	store := &delayStore{Store: inner, rtt: rtt}
	if _, err := manifest.Open(inner, path).Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
		b.Fatal(err)
	}
	url := ""
	if viaCommitter {
		cfg := committer.DefaultConfig()
		cfg.Store, cfg.ID = store, "bench"
		_, srv := serveCommitter(b, cfg, nil)
		url = srv.URL
	}
	gctx, stopGroups := context.WithCancel(ctx)
	var gwg sync.WaitGroup
	for g := range groups {
		gwg.Add(1)
		go func() {
			defer gwg.Done()
			follow(gctx, b, store, url, fmt.Sprintf("g%d", g))
		}()
	}
	defer func() { stopGroups(); gwg.Wait() }()
	var mu sync.Mutex
	var lat []float64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := producer.DefaultConfig()
			cfg.ObjectStore = store
			cfg.Stream = stream.MustNew(path, "s/data")
			cfg.Committer.URL = url
			p, err := producer.New(ctx, cfg)
			if err != nil {
				b.Error(err)
				return
			}
			defer p.Close(ctx)
			mine, err := submitLoad(ctx, p, float64(rate)/float64(n), time.Now(), dur)
			if err != nil {
				b.Error(err)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("nothing acknowledged")
	}
	return len(lat), lat
}

// submitLoad submits records of 1 KiB through p at rate records/s from start for dur, and
// returns the ack latencies (ms) of those acknowledged.
func submitLoad(ctx context.Context, p *producer.Producer, rate float64, start time.Time, dur time.Duration) ([]float64, error) {
	type sent struct {
		at time.Time
		t  *producer.RecordTicket
	}
	body := make([]byte, 1024)
	tickets := make(chan sent, 1<<16)
	done := make(chan []float64)
	go func() {
		var mine []float64
		for s := range tickets {
			if _, err := s.t.Wait(ctx); err == nil {
				mine = append(mine, float64(time.Since(s.at).Microseconds())/1000)
			}
		}
		done <- mine
	}()
	const tick = 10 * time.Millisecond
	perTick := rate * tick.Seconds()
	var err error
	for k := 0; time.Since(start) < dur && err == nil; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k) * tick)))
		for range int(float64(k+1)*perTick) - int(float64(k)*perTick) {
			var t *producer.RecordTicket
			if t, err = p.Submit(ctx, batchfmt.Record{Body: body}); err != nil {
				break
			}
			tickets <- sent{time.Now(), t}
		}
	}
	close(tickets)
	return <-done, err
}

// prefixed is the store URL raw with sub appended to its path.
func prefixed(b *testing.B, raw, sub string) string {
	u, err := url.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + sub
	return u.String()
}

// follow is a member of group that reads the stream and acknowledges every batch, its
// checkpoints written every 100 ms, until ctx ends.
func follow(ctx context.Context, b *testing.B, store objectstore.Store, url, group string) {
	cfg := consumer.DefaultGroupConfig()
	cfg.ObjectStore, cfg.Stream = store, stream.MustNew(path, "s/data")
	cfg.Group, cfg.AckInterval, cfg.Committer.URL = group, 100*time.Millisecond, url
	m, err := consumer.Open(ctx, cfg, consumer.GroupOptions{})
	if err != nil {
		b.Error(err)
		return
	}
	defer m.Close(context.Background())
	for {
		batch, err := m.Next(ctx)
		if err != nil {
			return
		}
		if n := len(batch.Records); n > 0 {
			m.AckThrough(batch.Records[n-1].SeqNum)
		}
	}
}
