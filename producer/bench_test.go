package producer

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

const (
	benchRecordBody    = 1024
	benchAppendRecords = 100
	benchFlushBytes    = 4 << 20
)

func benchStores() []struct {
	name string
	mk   func(b *testing.B) objectstore.Store
} {
	return []struct {
		name string
		mk   func(b *testing.B) objectstore.Store
	}{
		{"mem", func(*testing.B) objectstore.Store { return objectstore.NewMemStore() }},
		{"file", func(b *testing.B) objectstore.Store { return storetest.File(b) }},
	}
}

// BenchmarkAppend measures producer throughput (appends of 100 records of 1 KiB, batch
// objects of 4 MiB, 4 parallel uploads) beside a baseline of plain puts of 4 MiB objects by 4
// workers, carrying the same bytes, on the same store, in the same run.
func BenchmarkAppend(b *testing.B) {
	in := batchfmt.AppendInput{Records: make([]batchfmt.Record, benchAppendRecords)}
	for i := range in.Records {
		in.Records[i].Body = bytes.Repeat([]byte{byte('a' + i%26)}, benchRecordBody)
	}
	metered := int64(in.MeteredSize())
	for _, s := range benchStores() {
		b.Run(s.name+"/producer", func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.ObjectStore = s.mk(b)
			cfg.FlushSizeBytes = benchFlushBytes
			cfg.FlushInterval = time.Second
			p, err := New(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.SetBytes(metered)
			b.ResetTimer()
			var last *Ticket
			for range b.N {
				if last, err = p.Append(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := last.Result(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*benchAppendRecords)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(counterValue(p.m.commits), "commits")
			if err := p.Close(ctx); err != nil {
				b.Fatal(err)
			}
		})
		b.Run(s.name+"/plain-put", func(b *testing.B) {
			store := s.mk(b)
			total := int64(b.N) * metered
			obj := make([]byte, benchFlushBytes)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.SetBytes(metered)
			b.ResetTimer()
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						off := next.Add(benchFlushBytes) - benchFlushBytes
						if off >= total {
							return
						}
						n := min(int64(len(obj)), total-off)
						if _, err := objectstore.PutBytes(context.Background(), store, fmt.Sprintf("plain/%d-%d", w, i), obj[:n], objectstore.IfAbsent()); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N*benchAppendRecords)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkCommits measures manifest commits per second and conflicts with 1, 4 and 16
// concurrent producers on one stream, each appending single small records with every append
// its own batch object, with group commit (up to 256 batches per write) and without (1).
// It runs on mem and file, and on the S3 server when SLUICE_TEST_S3_URL is set.
func BenchmarkCommits(b *testing.B) {
	stores := append(benchStores(), struct {
		name string
		mk   func(b *testing.B) objectstore.Store
	}{"s3", func(b *testing.B) objectstore.Store { return storetest.S3(b) }})
	for _, s := range stores {
		for _, producers := range []int{1, 4, 16} {
			for _, group := range []int{256, 1} {
				name := fmt.Sprintf("%s/producers=%d/group=%v", s.name, producers, group > 1)
				b.Run(name, func(b *testing.B) {
					store := s.mk(b)
					ps := make([]*Producer, producers)
					for i := range ps {
						cfg := DefaultConfig()
						cfg.ObjectStore = store
						cfg.FlushInterval = FlushEveryAppend
						cfg.MaxGroupBatches = group
						cfg.UploadConcurrency = 8
						var err error
						if ps[i], err = New(context.Background(), cfg); err != nil {
							b.Fatal(err)
						}
					}
					ctx := context.Background()
					b.ResetTimer()
					var wg sync.WaitGroup
					for i, p := range ps {
						wg.Add(1)
						go func() {
							defer wg.Done()
							n := b.N / producers
							if i < b.N%producers {
								n++
							}
							var last *Ticket
							for j := range n {
								tk, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: fmt.Appendf(nil, "p%d-%d", i, j)}}})
								if err != nil {
									b.Error(err)
									return
								}
								last = tk
							}
							if last != nil {
								if _, err := last.Result(); err != nil {
									b.Error(err)
								}
							}
						}()
					}
					wg.Wait()
					b.StopTimer()
					var commits, conflicts float64
					for _, p := range ps {
						commits += counterValue(p.m.commits)
						conflicts += counterValue(p.m.commitErrors.WithLabelValues("conflict"))
						if err := p.Close(ctx); err != nil {
							b.Fatal(err)
						}
					}
					secs := b.Elapsed().Seconds()
					b.ReportMetric(commits/secs, "commits/s")
					b.ReportMetric(conflicts/secs, "conflicts/s")
					b.ReportMetric(float64(b.N)/secs, "appends/s")
					if commits > 0 {
						b.ReportMetric(conflicts/commits, "conflicts/commit")
					}
				})
			}
		}
	}
}
