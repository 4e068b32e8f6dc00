package committer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/producer"
)

// TestAnswersRenewTheWritersRole: a producer that found the committer only in the manifest
// keeps sending to it past the lease its snapshot showed, because each answer carries the
// renewed role; none of its appends is committed directly.
func TestAnswersRenewTheWritersRole(t *testing.T) {
	ctx := context.Background()
	store := newStream(t)
	reg := prometheus.NewRegistry()
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.Registerer = store, "c1", reg
	cfg.Lease, cfg.IdleTimeout = 200*time.Millisecond, time.Second
	_, srv := serveCommitter(t, cfg, nil)
	cfg.URL = srv.URL

	first := runProducers(t, "first", 1, 1, func(int) producer.Config { return producerConfig(store, cfg.URL) })
	before := counter(t, reg, "sluice_committer_requests_total")
	late, err := producer.New(ctx, producerConfig(store, "")) // knows the committer from the manifest only
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close(ctx)
	acks := first
	const appends = 15
	for i := range appends {
		body := fmt.Sprintf("late-%d", i)
		ack, err := late.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(body)}}})
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, acked{[]string{body}, ack})
		time.Sleep(cfg.Lease / 4) // 15 appends span several leases
	}
	verify(t, store, acks)
	if n := counter(t, reg, "sluice_committer_requests_total") - before; n != appends {
		t.Fatalf("the committer got %v of the late producer's %d appends: the rest were committed directly", n, appends)
	}
}
