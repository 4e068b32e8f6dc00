package main

import (
	"strings"
	"testing"
)

// TestServeGCGracePeriodErrorNamesFlag: README: "Errors name the flag and where the bad
// value came from". A --gc-grace-period the daemon cannot use (48h and more: the producers'
// commit deadline, half of it, must stay under the 24h producer-table expiry) is refused with
// a message that names --gc-grace-period (it once spoke of an internal "commit deadline").
func TestServeGCGracePeriodErrorNamesFlag(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, dir, "", nil, "serve", "--listen", "127.0.0.1:0", "--store", "mem://", "--gc-grace-period", "48h")
	if r.code == 0 {
		t.Fatalf("serve --gc-grace-period 48h: exit 0")
	}
	if !strings.Contains(r.stderr, "--gc-grace-period") {
		t.Errorf("serve --gc-grace-period 48h: stderr %q does not name --gc-grace-period", strings.TrimSpace(r.stderr))
	}
}
