package committer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// BenchmarkProducerProcesses runs N producer processes (1, 4, 16, 64: this test binary,
// re-executed) on one stream, sharing 10,000 records/s of 1 KiB by per-record Submit with
// the default config, through one committer in this process, on a store with a 30 ms round
// trip added by every process (the S3 server of SLUICE_TEST_S3_URL, or a file store in
// /dev/shm or a temporary directory). It reports the records/s of all, the ack p50 and p99
// of all records, the worst process's p99, p99 against N=1's (p99_vs_1), and the p99 of
// the producers' uploads as they saw them (put_p99_ms, the 30 ms included): what the
// store and the machine gave, beside what sluice made of it.
//
//	go test -run '^$' -bench ProducerProcesses -benchtime 1x ./committer
func BenchmarkProducerProcesses(b *testing.B) {
	const rate, rtt, dur = 10_000, 30 * time.Millisecond, 5 * time.Second
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var base float64
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("producers=%d", n), func(b *testing.B) {
			for range b.N {
				all, puts, worst, com := runProcesses(b, exe, n, rate, rtt, dur)
				p99 := all[len(all)*99/100]
				if n == 1 {
					base = p99
				}
				b.ReportMetric(float64(len(all))/dur.Seconds(), "records/s")
				b.ReportMetric(all[len(all)/2], "ack_p50_ms")
				b.ReportMetric(p99, "ack_p99_ms")
				b.ReportMetric(worst, "worst_p99_ms")
				b.ReportMetric(p99/base, "p99_vs_1")
				b.ReportMetric(puts[len(puts)*99/100], "put_p99_ms")
				b.ReportMetric(float64(com.writes)/dur.Seconds(), "writes/s")
				b.ReportMetric(com.batchesPerWrite, "batches/write")
				b.ReportMetric(com.writeMs, "write_ms")
				b.ReportMetric(com.requestMs, "request_ms")
			}
		})
	}
}

// runProcesses runs n producer processes against a new stream and returns the sorted ack
// and upload latencies (ms) of all, the worst process's ack p99 and the committer's figures.
func runProcesses(b *testing.B, exe string, n, rate int, rtt, dur time.Duration) (acks, puts []float64, worst float64, f committerFigures) {
	ctx := context.Background()
	dir := b.TempDir()
	// The file store goes to memory where it can: hundreds of uploads a second, each
	// fsynced to one disk, would measure the disk (an object store spreads them).
	storeDir := filepath.Join(dir, "store")
	if shm, err := os.MkdirTemp("/dev/shm", "sluice-bench-"); err == nil {
		defer os.RemoveAll(shm)
		storeDir = shm
	}
	storeURL := "file://" + storeDir
	if raw := os.Getenv("SLUICE_TEST_S3_URL"); raw != "" {
		storeURL = prefixed(b, raw, fmt.Sprintf("bench-%d", time.Now().UnixNano()))
	}
	inner, err := storeurl.Open(ctx, storeURL)
	if err != nil {
		b.Fatal(err)
	}
	defer inner.Close()
	if _, err := manifest.Open(inner, path).Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
		b.Fatal(err)
	}
	cfg := committer.DefaultConfig()
	reg := prometheus.NewRegistry()
	cfg.Store, cfg.ID, cfg.Registerer = &delayStore{Store: inner, rtt: rtt}, "bench", reg
	_, srv := serveCommitter(b, cfg, nil)

	start := time.Now().Add(time.Second + time.Duration(n)*50*time.Millisecond) // all started by then
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmd := exec.Command(exe, "-test.run=^TestProducerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SLUICE_BENCH_CHILD=1", "SLUICE_BENCH_STORE="+storeURL, "SLUICE_BENCH_COMMITTER="+srv.URL,
			"SLUICE_BENCH_RATE="+strconv.FormatFloat(float64(rate)/float64(n), 'f', -1, 64),
			// Each process starts at its own phase of the flush interval, as producers on
			// separate machines would; started in lockstep, they would flush in lockstep.
			"SLUICE_BENCH_START="+strconv.FormatInt(start.Add(producer.DefaultConfig().FlushInterval*time.Duration(i)/time.Duration(n)).UnixNano(), 10),
			"SLUICE_BENCH_DUR="+dur.String(),
			"SLUICE_BENCH_RTT="+rtt.String(), "SLUICE_BENCH_OUT="+filepath.Join(dir, fmt.Sprintf("lat-%d.json", i)))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			b.Fatalf("producer process %d: %v", i, err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("lat-%d.json", i)))
		if err != nil {
			b.Fatal(err)
		}
		var out processFigures
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Acks) == 0 || len(out.Puts) == 0 {
			b.Fatalf("producer process %d: %d acks, %d uploads (%v)", i, len(out.Acks), len(out.Puts), err)
		}
		slices.Sort(out.Acks)
		worst = max(worst, out.Acks[len(out.Acks)*99/100])
		acks, puts = append(acks, out.Acks...), append(puts, out.Puts...)
	}
	slices.Sort(acks)
	slices.Sort(puts)
	f.writes, f.batchesPerWrite = histogramMean(b, reg, "sluice_committer_batches_per_write")
	_, writeS := histogramMean(b, reg, "sluice_committer_manifest_write_seconds")
	_, requestS := histogramMean(b, reg, "sluice_committer_request_seconds")
	f.writeMs, f.requestMs = writeS*1000, requestS*1000
	return acks, puts, worst, f
}

// processFigures is what a producer process reports: its ack latencies and its uploads'
// (ms).
type processFigures struct {
	Acks []float64 `json:"acks"`
	Puts []float64 `json:"puts"`
}

// committerFigures are a run's manifest writes, batches per write, mean write and request
// times.
type committerFigures struct {
	writes          uint64
	batchesPerWrite float64
	writeMs         float64
	requestMs       float64 // mean from a request's arrival to its answer
}

// TestProducerProcess is a producer process of BenchmarkProducerProcesses (skipped
// otherwise): it submits at its share of the rate and writes its ack latencies as JSON.
func TestProducerProcess(t *testing.T) {
	if os.Getenv("SLUICE_BENCH_CHILD") == "" {
		t.Skip("a producer process of BenchmarkProducerProcesses only")
	}
	ctx := context.Background()
	rate, err1 := strconv.ParseFloat(os.Getenv("SLUICE_BENCH_RATE"), 64)
	startNs, err2 := strconv.ParseInt(os.Getenv("SLUICE_BENCH_START"), 10, 64)
	dur, err3 := time.ParseDuration(os.Getenv("SLUICE_BENCH_DUR"))
	rtt, err4 := time.ParseDuration(os.Getenv("SLUICE_BENCH_RTT"))
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	inner, err := storeurl.Open(ctx, os.Getenv("SLUICE_BENCH_STORE"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	cfg := producer.DefaultConfig()
	puts := &durations{}
	cfg.ObjectStore = &delayStore{Store: inner, rtt: rtt, puts: puts}
	cfg.Stream = stream.MustNew(path, "s/data")
	cfg.Committer.URL = os.Getenv("SLUICE_BENCH_COMMITTER")
	p, err := producer.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	lat, err := submitLoad(ctx, p, rate, time.Unix(0, startNs), dur)
	if err != nil {
		t.Fatal(err)
	}
	puts.mu.Lock()
	out, err := json.Marshal(processFigures{Acks: lat, Puts: puts.ms})
	puts.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("SLUICE_BENCH_OUT"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}
