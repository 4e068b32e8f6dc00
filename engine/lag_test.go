package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// gaugeValues returns the series of a gauge family, by their labels printed as
// name=value pairs in label order.
func gaugeValues(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestDaemonLagMetrics: the engine exports, for a stream it serves, each group's lag (records
// from the checkpoint to the tail, the age of the record at the checkpoint by the engine's
// clock) and the manifest's size; a deleted group's series goes.
func TestDaemonLagMetrics(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testseed.Get(t), 31))
	store := objectstore.NewMemStore()
	reg := prometheus.NewRegistry()
	cfg := engine.DefaultConfig()
	cfg.Store = store
	cfg.Registerer = reg
	cfg.LagInterval = 5 * time.Millisecond
	now := time.UnixMilli(1_800_000_000_000)
	cfg.Now = func() time.Time { return now }
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	const b, s = "lag-basin", "orders"
	if _, err := e.CreateBasin(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateStream(ctx, b, s, manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	// Appends of several records each, client timestamps 1 s apart.
	var stamps []uint64
	for a := range 2 + rng.IntN(4) {
		var in batchfmt.AppendInput
		for range 1 + rng.IntN(4) {
			ts := uint64(now.UnixMilli()) - 100_000 + uint64(len(stamps))*1000
			stamps = append(stamps, ts)
			in.Records = append(in.Records, batchfmt.Record{Timestamp: ts, HasTimestamp: true, Body: []byte(fmt.Sprint(a))})
		}
		if _, err := e.Append(ctx, b, s, in); err != nil {
			t.Fatal(err)
		}
	}
	n := uint64(len(stamps))
	loc, err := stream.Locate(b, s)
	if err != nil {
		t.Fatal(err)
	}
	ccfg := consumer.DefaultGroupConfig()
	ccfg.ObjectStore, ccfg.Stream = store, loc
	cp := uint64(rng.IntN(int(n)))
	ccfg.Group = "billing"
	if _, _, err := consumer.ResetGroup(ctx, ccfg.Config, ccfg.Group, consumer.AtSeqNum(cp), now); err != nil {
		t.Fatal(err)
	}
	ccfg.Group = "done"
	if _, _, err := consumer.ResetGroup(ctx, ccfg.Config, ccfg.Group, consumer.AtTailOffset(0), now); err != nil {
		t.Fatal(err)
	}
	data, _, err := objectstore.ReadAll(ctx, store, loc.ManifestKey())
	if err != nil {
		t.Fatal(err)
	}
	labels := func(g string) string { return "basin=" + b + " group=" + g + " stream=" + s + " " }
	want := map[string]float64{labels("billing"): float64(n - cp), labels("done"): 0}
	wantSecs := map[string]float64{labels("billing"): float64(now.UnixMilli()-int64(stamps[cp])) / 1000, labels("done"): 0}
	wantSize := map[string]float64{"basin=" + b + " stream=" + s + " ": float64(len(data))}
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs := gaugeValues(t, reg, "sluice_consumer_group_lag_records")
		secs := gaugeValues(t, reg, "sluice_consumer_group_lag_seconds")
		size := gaugeValues(t, reg, "sluice_manifest_size_bytes")
		if fmt.Sprint(recs) == fmt.Sprint(want) && fmt.Sprint(secs) == fmt.Sprint(wantSecs) && fmt.Sprint(size) == fmt.Sprint(wantSize) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag records %v (want %v), seconds %v (want %v), manifest size %v (want %v)", recs, want, secs, wantSecs, size, wantSize)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := consumer.DeleteGroup(ctx, ccfg.Config, ccfg.Group); err != nil {
		t.Fatal(err)
	}
	delete(want, labels("done"))
	for fmt.Sprint(gaugeValues(t, reg, "sluice_consumer_group_lag_records")) != fmt.Sprint(want) {
		if time.Now().After(deadline) {
			t.Fatalf("after deleting group done: %v", gaugeValues(t, reg, "sluice_consumer_group_lag_records"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
