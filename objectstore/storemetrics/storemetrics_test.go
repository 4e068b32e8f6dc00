package storemetrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storemetrics"
)

// TestOperationsAreCountedByResult: a put that succeeds and a get of a missing key show as
// one "ok" put and one "not_found"-class get, with the put's bytes.
func TestOperationsAreCountedByResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := storemetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := objectstore.Instrument(objectstore.NewMemStore(), m)
	ctx := context.Background()
	if _, err := s.Put(ctx, "k", strings.NewReader("hello"), 5, objectstore.PutCondition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "missing", objectstore.GetOptions{}); err == nil {
		t.Fatal("get of a missing key succeeded")
	}
	if got := counter(t, reg, "put", "ok"); got != 1 {
		t.Errorf("put ok = %v, want 1", got)
	}
	class := objectstore.ErrorClass(objectstore.ErrNotFound)
	if got := counter(t, reg, "get", class); got != 1 {
		t.Errorf("get %s = %v, want 1", class, got)
	}
}

// TestNewRefusesNilAndDuplicateRegistration: no registerer is refused with ErrNilRegisterer,
// and a second set of the families on one registry is refused rather than panicking.
func TestNewRefusesNilAndDuplicateRegistration(t *testing.T) {
	if _, err := storemetrics.New(nil); !errors.Is(err, storemetrics.ErrNilRegisterer) {
		t.Errorf("New(nil) = %v, want ErrNilRegisterer", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := storemetrics.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := storemetrics.New(reg); err == nil {
		t.Error("a second New on one registry succeeded")
	}
}

// counter is sluice_objectstore_operations_total{op, result} as reg shows it.
func counter(t *testing.T, reg *prometheus.Registry, op, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_objectstore_operations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] == op && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
