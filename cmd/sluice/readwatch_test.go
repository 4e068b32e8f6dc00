package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadFollowIsToldByTheDaemon: `sluice read --follow` on the store a daemon serves, in
// another process, watches the stream through the daemon (the committer the manifest
// names) and gets the records appended through the daemon's API.
func TestReadFollowIsToldByTheDaemon(t *testing.T) {
	dir := t.TempDir()
	base := startServe(t, dir, nil)
	do := apiCaller(t, base, "watch-basin")
	if code, body := do("POST", "/v1/basins", `{"basin":"watch-basin"}`); code != 201 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	if code, body := do("PUT", "/streams/events", `{"stream":"events","config":{}}`); code/100 != 2 {
		t.Fatalf("create stream: %d %s", code, body)
	}
	if code, body := do("POST", "/streams/events/records", `{"records":[{"body":"first"}]}`); code != 200 {
		t.Fatalf("append: %d %s", code, body)
	}
	const n = 3
	done := make(chan result, 1)
	go func() {
		done <- sluice(t, dir, "", nil, "read", "--basin", "watch-basin", "events", "--seq-num", "1",
			"--follow", "--count", fmt.Sprint(n), "--format", "raw")
	}()
	// Append once the reader watches through the daemon.
	served := regexp.MustCompile(`(?m)^sluice_watch_served_total (\d+)$`)
	for {
		_, metrics := httpGet(t, base+"/metrics")
		if m := served.FindStringSubmatch(metrics); m != nil && m[1] != "0" {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("read ended before watching: exit %d\n%s", r.code, r.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	var want []string
	for i := range n {
		body := fmt.Sprintf("rec-%d", i)
		want = append(want, body)
		if code, resp := do("POST", "/streams/events/records", `{"records":[{"body":"`+body+`"}]}`); code != 200 {
			t.Fatalf("append: %d %s", code, resp)
		}
	}
	r := <-done
	if r.code != 0 || strings.TrimSpace(r.stdout) != strings.Join(want, "\n") {
		t.Fatalf("read --follow: exit %d\nstdout %q, want %q\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
}
