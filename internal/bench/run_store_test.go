package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// storeTarget returns a target on s for a stream of its own, with a 10 ms flush interval.
func storeTarget(t *testing.T, s objectstore.Store, name string, tweak ...func(*producer.Config)) *StoreTarget {
	t.Helper()
	cfg := producer.DefaultConfig()
	cfg.FlushInterval = 10 * time.Millisecond
	for _, f := range tweak {
		f(&cfg)
	}
	tg, err := NewStoreTarget(s, "", name, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// assertNoStreamLeft fails t if anything of the stream name is left in s.
func assertNoStreamLeft(t *testing.T, s objectstore.Store, name string) {
	t.Helper()
	st, _ := stream.Locate("", name)
	dir := strings.TrimSuffix(st.ManifestKey(), "manifest")
	page, err := s.List(context.Background(), dir, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) > 0 {
		t.Errorf("after the run, %d objects of the stream are left, first %q", len(page.Objects), page.Objects[0].Key)
	}
}

// TestRunOnStoreMeasuresAndDeletes: a short run of two producers on a memory store acks
// records, the reader gets all of them, the percentiles are ordered, requests are counted
// (and at least one put and one get), and the stream is gone afterwards.
func TestRunOnStoreMeasuresAndDeletes(t *testing.T) {
	for _, appendSize := range []int{0, 10} {
		s := objectstore.NewMemStore()
		tg := storeTarget(t, s, "bench-test")
		res, err := Run(t.Context(), tg, Config{Producers: 2, RecordSize: 100, Duration: 300 * time.Millisecond, AppendSize: appendSize})
		if err != nil {
			t.Fatalf("append size %d: %v", appendSize, err)
		}
		sum := res.Summary()
		if res.Records == 0 || sum.RecordsPerS <= 0 || sum.MBPerS <= 0 {
			t.Errorf("append size %d: %d records, %v records/s, %v MB/s: want some", appendSize, res.Records, sum.RecordsPerS, sum.MBPerS)
		}
		if res.E2E.Count() != res.Records || res.Ack.Count() != res.Records {
			t.Errorf("append size %d: %d acked, %d ack latencies, %d delivered: want all equal", appendSize, res.Records, res.Ack.Count(), res.E2E.Count())
		}
		if !(sum.AckP50Ms > 0 && sum.AckP50Ms <= sum.AckP90Ms && sum.AckP90Ms <= sum.AckP99Ms && sum.AckP99Ms <= sum.AckMaxMs) {
			t.Errorf("append size %d: ack p50 %v p90 %v p99 %v max %v: want 0 < p50 <= p90 <= p99 <= max", appendSize, sum.AckP50Ms, sum.AckP90Ms, sum.AckP99Ms, sum.AckMaxMs)
		}
		if !(sum.E2EP50Ms > 0 && sum.E2EP50Ms <= sum.E2EP99Ms && sum.E2EP99Ms <= sum.E2EMaxMs) {
			t.Errorf("append size %d: e2e p50 %v p99 %v max %v: want 0 < p50 <= p99 <= max", appendSize, sum.E2EP50Ms, sum.E2EP99Ms, sum.E2EMaxMs)
		}
		if res.Requests["put"] == 0 || res.Requests["get"] == 0 || sum.RequestsPerGiB == nil || *sum.RequestsPerGiB <= 0 {
			t.Errorf("append size %d: requests %v, per GiB %v: want puts, gets and a positive rate", appendSize, res.Requests, sum.RequestsPerGiB)
		}
		if len(res.Timeline) == 0 {
			t.Errorf("append size %d: empty timeline", appendSize)
		}
		if res.Interrupted {
			t.Errorf("append size %d: Interrupted set on a run that was not", appendSize)
		}
		assertNoStreamLeft(t, s, "bench-test")
	}
}

// TestRunKeepsTheRate: at 400 records/s for 1 s, 400 records are written: the pacing
// neither runs ahead nor drops the last ones.
func TestRunKeepsTheRate(t *testing.T) {
	s := objectstore.NewMemStore()
	res, err := Run(t.Context(), storeTarget(t, s, "bench-rate"), Config{Producers: 3, Rate: 400, RecordSize: 10, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 400 {
		t.Errorf("%d records at 400/s for 1s: want 400", res.Records)
	}
}

// TestRunInterruptedCleansUp: a run whose context ends early returns soon, says it was
// interrupted, keeps what it measured, and deletes the stream.
func TestRunInterruptedCleansUp(t *testing.T) {
	s := objectstore.NewMemStore()
	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, storeTarget(t, s, "bench-int"), Config{Producers: 1, Rate: 1000, RecordSize: 10, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("an interrupted run took %v to return", el)
	}
	if !res.Interrupted || res.Records == 0 {
		t.Errorf("Interrupted %v with %d records: want true with some", res.Interrupted, res.Records)
	}
	assertNoStreamLeft(t, s, "bench-int")
}

// TestRunFailedAppendIsAnErrorAndCleansUp: when the store refuses every batch upload, the
// run ends with the appends' error (their delivery timeout) and still deletes the stream.
func TestRunFailedAppendIsAnErrorAndCleansUp(t *testing.T) {
	mem := objectstore.NewMemStore()
	st, _ := stream.Locate("", "bench-fail")
	fs, err := faultstore.New(mem, 1, faultstore.Rule{Ops: []objectstore.Op{objectstore.OpPut}, Key: st.DataPrefix(), ErrBefore: 1})
	if err != nil {
		t.Fatal(err)
	}
	tg := storeTarget(t, fs, "bench-fail", func(c *producer.Config) { c.DeliveryTimeout = 300 * time.Millisecond })
	_, err = Run(t.Context(), tg, Config{Producers: 1, Rate: 100, RecordSize: 10, Duration: 5 * time.Second})
	if !errors.Is(err, producer.ErrDeliveryTimeout) {
		t.Fatalf("Run = %v, want the appends' producer.ErrDeliveryTimeout", err)
	}
	assertNoStreamLeft(t, mem, "bench-fail")
}

// TestRunRefusesABadConfig: Run checks its config before touching the target.
func TestRunRefusesABadConfig(t *testing.T) {
	s := objectstore.NewMemStore()
	_, err := Run(t.Context(), storeTarget(t, s, "bench-bad"), Config{Producers: 0, RecordSize: 10, Duration: time.Second})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Run = %v, want ErrInvalidConfig", err)
	}
	if page, _ := s.List(context.Background(), "", "", 1); len(page.Objects) > 0 {
		t.Errorf("a refused run wrote %q", page.Objects[0].Key)
	}
}
