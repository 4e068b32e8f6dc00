package committer_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
)

// TestIdleStreamLoopEnds: a stream that takes no request for IdleTimeout loses its commit
// loop (the streams gauge falls to 0); its next request starts a new loop and commits. The
// producers reach the committer in process, through Local.
func TestIdleStreamLoopEnds(t *testing.T) {
	store := newStream(t)
	reg := prometheus.NewRegistry()
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL, cfg.Registerer = store, "c1", "http://c1.invalid", reg
	cfg.Lease, cfg.IdleTimeout = 20*time.Millisecond, 60*time.Millisecond
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	pcfg := func(int) producer.Config {
		pc := producerConfig(store, cfg.URL)
		pc.Committer.Local = c
		return pc
	}
	var acks []acked
	for round := range 2 {
		acks = append(acks, runProducers(t, "p"+string(rune('a'+round)), 2, 10, pcfg)...)
		if n := gauge(t, reg, "sluice_committer_streams"); n != 1 {
			t.Fatalf("round %d: %v streams with a loop right after commits, want 1", round, n)
		}
		deadline := time.Now().Add(5 * time.Second)
		for gauge(t, reg, "sluice_committer_streams") != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the stream's loop did not end after %v idle", round, cfg.IdleTimeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	verify(t, store, acks)
	if writes := counter(t, reg, "sluice_committer_manifest_writes_total"); writes == 0 {
		t.Fatal("no commit went through the committer")
	}
}

// TestIdleTimeoutMustExceedLease: a loop may not end while its role is still live.
func TestIdleTimeoutMustExceedLease(t *testing.T) {
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL = newStream(t), "c1", "http://c1.invalid"
	cfg.IdleTimeout = cfg.Lease
	if _, err := committer.New(cfg); err == nil {
		t.Fatal("New accepted an idle timeout equal to the lease")
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return metricValue(t, reg, name)
}
