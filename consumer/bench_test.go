package consumer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/producer"
)

// benchStream writes objects × perObject records of bodySize bytes (random, so zstd has
// something to chew on but not everything) and returns the metered total.
func benchStream(b *testing.B, store objectstore.Store, comp batchfmt.Compression, objects, perObject, bodySize int) (records int, metered int64) {
	b.Helper()
	ctx := context.Background()
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.FlushInterval = time.Hour
	cfg.BatchCompression = comp
	p, err := producer.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "sluice", "stream", "record", "0123456789"}
	for range objects {
		recs := make([]batchfmt.Record, perObject)
		for i := range recs {
			body := make([]byte, 0, bodySize)
			for len(body) < bodySize {
				body = append(body, words[rng.IntN(len(words))]...)
				body = append(body, ' ')
			}
			recs[i] = batchfmt.Record{Body: body[:bodySize], Headers: []batchfmt.Header{{Name: []byte("type"), Value: []byte("bench")}}}
			metered += int64(recs[i].MeteredSize())
		}
		tk, err := p.Append(ctx, batchfmt.AppendInput{Records: recs})
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := tk.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		records += perObject
	}
	return records, metered
}

// BenchmarkRead measures a Session reading a whole stream, beside a baseline of plain
// sequential gets and decodes of the same objects (no read-ahead, no positions), on each
// store, without and with zstd. Metered MB/s come from SetBytes; records/s is reported.
func BenchmarkRead(b *testing.B) {
	const objects, perObject, bodySize = 32, 1000, 256
	for _, be := range storetest.Backends {
		for _, comp := range []batchfmt.Compression{batchfmt.CompressionNone, batchfmt.CompressionZstd} {
			b.Run(be.Name+"/"+comp.String(), func(b *testing.B) {
				store := be.New(b)
				records, metered := benchStream(b, store, comp, objects, perObject, bodySize)
				ctx := context.Background()
				snap, err := manifest.Open(store, "ingest/manifest").Load(ctx)
				if err != nil {
					b.Fatal(err)
				}
				var objBytes uint64
				for _, e := range snap.State.Entries {
					objBytes += e.ObjectBytes
				}
				b.Logf("%d records, %d metered bytes, %d object bytes in %d objects", records, metered, objBytes, len(snap.State.Entries))
				b.Run("session", func(b *testing.B) {
					cfg := DefaultConfig()
					cfg.ObjectStore = store
					r, err := NewReader(cfg)
					if err != nil {
						b.Fatal(err)
					}
					b.SetBytes(metered)
					for b.Loop() {
						s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0)})
						if err != nil {
							b.Fatal(err)
						}
						n := 0
						for {
							bt, err := s.Next(ctx)
							n += len(bt.Records)
							if errors.Is(err, ErrDone) {
								break
							}
							if err != nil {
								b.Fatal(err)
							}
						}
						s.Close()
						if n != records {
							b.Fatalf("read %d records, want %d", n, records)
						}
					}
					b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
				})
				b.Run("baseline-get-decode", func(b *testing.B) {
					b.SetBytes(metered)
					for b.Loop() {
						n := 0
						for _, e := range snap.State.Entries {
							data, _, err := objectstore.ReadAll(ctx, store, e.Key)
							if err != nil {
								b.Fatal(err)
							}
							bt, err := batchfmt.Decode(data)
							if err != nil {
								b.Fatal(err)
							}
							it := bt.Iter(nil)
							for it.Next() {
								_ = it.Record()
								n++
							}
						}
						if n != records {
							b.Fatalf("decoded %d records, want %d", n, records)
						}
					}
					b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
				})
			})
		}
	}
}

// BenchmarkAppendToDelivery measures the time from Append to the delivery of the record to a
// follower, on the file store, at flush intervals of 100 ms and 10 ms; the follower is woken
// by a Notifier (signalled when the append is acknowledged, as the server does) or by polling
// alone (10 ms). Appends are paced 2 ms apart. Reports p50 and p99 in ms.
func BenchmarkAppendToDelivery(b *testing.B) {
	for _, flush := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		for _, mode := range []string{"notify", "poll10ms"} {
			b.Run(fmt.Sprintf("flush=%v/%s", flush, mode), func(b *testing.B) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				store := storetest.File(b)
				pcfg := producer.DefaultConfig()
				pcfg.ObjectStore = store
				pcfg.FlushInterval = flush
				p, err := producer.New(ctx, pcfg)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close(context.Background())
				note := NewNotifier()
				cfg := DefaultConfig()
				cfg.ObjectStore = store
				cfg.PollInterval = 10 * time.Millisecond
				if mode == "notify" {
					cfg.Notifier = note
					cfg.PollInterval = time.Hour
				}
				r, err := NewReader(cfg)
				if err != nil {
					b.Fatal(err)
				}
				s, err := r.Open(ctx, ReadRequest{Start: AtTailOffset(0), Follow: true})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()

				var mu sync.Mutex
				sent := map[uint64]time.Time{}
				var lat []time.Duration
				done := make(chan struct{})
				var want uint64
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
							id := binary.BigEndian.Uint64(rec.Body)
							lat = append(lat, now.Sub(sent[id]))
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
						if _, err := tk.Wait(ctx); err == nil {
							note.Notify("ingest/manifest")
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
}
