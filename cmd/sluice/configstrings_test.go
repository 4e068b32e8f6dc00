package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFileKeepsStringValues: a config-file value is the flag's value. A string flag
// whose value YAML would also read as a number (a fencing token "0123", an auth token of
// digits) must reach the flag as written, not as the number's re-formatting ("123").
func TestConfigFileKeepsStringValues(t *testing.T) {
	c := newCLI(t, backend{name: "file"})
	c.ok("", "stream", "create", "tokens")
	c.ok("", "fence", "tokens", "0123")
	cfg := filepath.Join(c.dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("fencing-token: 0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Same as `sluice trim tokens 0 --fencing-token 0123`, which is accepted.
	r := c.run("", "--config", cfg, "trim", "tokens", "0")
	if r.code != 0 {
		t.Errorf("trim with fencing-token: 0123 from --config: exit %d, stderr %q (the token reached the flag as something else)", r.code, strings.TrimSpace(r.stderr))
	}
	if err := os.WriteFile(cfg, []byte("prefix: 1e3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("", "stream", "create", "1e3-stream")
	r = c.ok("", "--config", cfg, "stream", "list")
	if !strings.Contains(r.stdout, `"1e3-stream"`) {
		t.Errorf("stream list with prefix: 1e3 from --config printed %q, want the stream 1e3-stream", r.stdout)
	}
}

// A number of days that overflows a time.Duration is reported as a garbage (negative or
// fractional) duration instead of the value given.
func TestHugeDayDurationIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"--retention-age", "--delete-on-empty-min-age"} {
		r := sluice(t, dir, "", nil, "stream", "create", "s", flag, "999999d")
		if r.code == 0 || !strings.Contains(r.stderr, "999999d") || strings.Contains(r.stderr, "-1620501h") {
			t.Errorf("stream create %s 999999d: exit %d, stderr %q; want an error naming 999999d (too large)", flag, r.code, r.stderr)
		}
	}
}
