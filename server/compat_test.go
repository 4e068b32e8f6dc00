package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/s2api"
)

func defaultBasinConfig() s2api.BasinConfig { return s2api.BasinConfig{} }

// TestSDKCompat runs S2's TypeScript SDK (scripts/s2-sdk/compat.mjs) against the server with
// the reference backend. It needs node and `npm ci --prefix scripts/s2-sdk`; without them it
// skips, except under CI=true, where it fails.
func TestSDKCompat(t *testing.T) {
	dir, err := filepath.Abs("../scripts/s2-sdk")
	if err != nil {
		t.Fatal(err)
	}
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("SDK compat check cannot run under CI: %s (run `npm ci --prefix scripts/s2-sdk`)", why)
		}
		t.Skipf("skipping SDK compat check: %s (run `npm ci --prefix scripts/s2-sdk`)", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@s2-dev", "streamstore", "package.json")); err != nil {
		missing("SDK not installed")
	}
	const token = "compat-secret-token"
	env := startServer(t, withToken(token))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "compat.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"S2_ACCOUNT_ENDPOINT="+env.url,
		"S2_BASIN_ENDPOINT="+env.url,
		"S2_ACCESS_TOKEN="+token,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("compat.mjs output:\n%s", out)
	if err != nil {
		t.Fatalf("compat.mjs failed: %v", err)
	}
	if !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatalf("compat.mjs did not report a clean summary")
	}
}
