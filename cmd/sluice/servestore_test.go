package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeNoticesAVanishedStore: `sluice serve --store ./d`, then ./d removed: /health
// answers 503, reads of a basin that was there are storage failures, not a missing basin, and
// each failure is logged with its cause.
func TestServeNoticesAVanishedStore(t *testing.T) {
	dir := t.TempDir()
	base, logs := startServeLogs(t, dir, nil, "--store", "./d")
	do := apiCaller(t, base, "vanish-basin")
	for _, c := range [][3]string{
		{"POST", "/v1/basins", `{"basin":"vanish-basin"}`},
		{"POST", "/v1/streams", `{"stream":"s"}`},
		{"POST", "/v1/streams/s/records", `{"records":[{"body":"one"}]}`},
	} {
		if code, body := do(c[0], c[1], c[2]); code/100 != 2 {
			t.Fatalf("%s %s: %d %s", c[0], c[1], code, body)
		}
	}
	if code, body := httpGet(t, base+"/health"); code != 200 {
		t.Fatalf("/health before: %d %q", code, body)
	}
	if err := os.RemoveAll(filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, base+"/health"); code != 503 || !strings.Contains(body, "store unavailable") {
		t.Errorf("/health with the store's directory gone: %d %q, want 503 store unavailable", code, body)
	}
	for _, c := range [][3]string{
		{"GET", "/v1/streams/s/records?seq_num=0", ""},
		{"GET", "/v1/streams", ""},
		{"POST", "/v1/basins", `{"basin":"other-basin"}`},
	} {
		if code, body := do(c[0], c[1], c[2]); code/100 != 5 || strings.Contains(body, "not_found") {
			t.Errorf("%s %s with the store's directory gone: %d %s, want a storage failure", c[0], c[1], code, body)
		}
	}
	// The cause (the directory's path) is in the log once for each failure, never in the answers.
	// A request's line is written after its answer is sent: wait for it.
	var failed, health int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		failed, health = 0, 0
		for _, l := range strings.Split(logs(), "\n") {
			if !strings.Contains(l, "the store's directory is missing") {
				continue
			}
			switch {
			case strings.Contains(l, `"msg":"request failed"`) && strings.Contains(l, `"level":"ERROR"`):
				failed++
			case strings.Contains(l, `"msg":"health check: store unavailable`):
				health++
			}
		}
		if (failed == 3 && health == 1) || time.Now().After(deadline) {
			break
		}
	}
	if failed != 3 || health != 1 {
		t.Errorf("the log has %d failed requests and %d failed health checks with the cause, want 3 and 1:\n%s", failed, health, logs())
	}
}
