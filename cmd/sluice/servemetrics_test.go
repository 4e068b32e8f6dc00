package main

import (
	"strings"
	"testing"
)

// TestServeMetricsShowProducerAndConsumerFamilies: README ("Metrics reference": "In the
// daemon, the per-stream producers ... and readers register on the daemon's registry, so
// /metrics shows the producer, consumer, GC and object-store families above together") and
// `sluice serve --help` promise sluice_producer_* and sluice_consumer_* on /metrics after an
// append and a read through the API (the engine once registered them nowhere).
func TestServeMetricsShowProducerAndConsumerFamilies(t *testing.T) {
	dir := t.TempDir()
	base := startServe(t, dir, nil)
	do := apiCaller(t, base, "metrics-basin")
	if code, body := do("POST", "/v1/basins", `{"basin":"metrics-basin"}`); code != 201 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	if code, body := do("PUT", "/v1/streams/events", `{"stream":"events","config":{}}`); code/100 != 2 {
		t.Fatalf("create stream: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/streams/events/records", `{"records":[{"body":"a"},{"body":"b"}]}`); code != 200 {
		t.Fatalf("append: %d %s", code, body)
	}
	if code, body := do("GET", "/v1/streams/events/records?seq_num=0&count=10", ""); code != 200 || !strings.Contains(body, `"body":"b"`) {
		t.Fatalf("read: %d %s", code, body)
	}
	code, metrics := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{"sluice_producer_appends_total", "sluice_producer_records_total", "sluice_consumer_records_total"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics after an API append and read has no %s (README: the daemon's /metrics shows the producer and consumer families)", want)
		}
	}
}
