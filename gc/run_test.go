package gc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// TestRun: rounds run at once and on Trigger, pass over every listed stream (a missing one
// reports ErrStreamNotFound), feed the metrics, and Close waits for the loop.
func TestRun(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	s.object(2)
	orphan := dpre + "/00000000000000000000000000aa"
	if _, err := objectstore.PutBytes(ctx, fs, orphan, []byte("x"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	type result struct {
		rep Report
		err error
	}
	results := make(chan result, 10)
	reg := prometheus.NewRegistry()
	cfg := testConfig(time.Now)
	cfg.Interval = time.Hour
	cfg.Registerer = reg
	cfg.OnPass = func(rep Report, err error) { results <- result{rep, err} }
	streams := []stream.Stream{ingest, stream.MustNew("gone/manifest", "gone")}
	r, err := Run(ctx, fs, cfg, func(context.Context) ([]stream.Stream, error) { return streams, nil })
	if err != nil {
		t.Fatal(err)
	}
	round := func() (Report, error) {
		t.Helper()
		a, b := <-results, <-results
		if !errors.Is(b.err, ErrStreamNotFound) {
			t.Fatalf("missing stream: %v", b.err)
		}
		return a.rep, a.err
	}
	if rep, err := round(); err != nil || rep.Deleted != 0 || rep.Young != 1 {
		t.Fatalf("first round: %+v %v", rep, err)
	}
	fs.advance(11 * time.Minute)
	r.Trigger()
	if rep, err := round(); err != nil || rep.Deleted != 1 {
		t.Fatalf("triggered round: %+v %v", rep, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		got[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
	}
	if got["sluice_gc_objects_deleted_total"] != 1 || got["sluice_gc_passes_total"] != 4 || got["sluice_gc_pass_errors_total"] != 2 {
		t.Fatalf("metrics: %v", got)
	}
	checkIntact(t, fs)
}
