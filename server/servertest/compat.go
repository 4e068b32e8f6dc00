package servertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testSDKCompat runs S2's TypeScript SDK (scripts/s2-sdk/compat.mjs) against the server with
// the backend under test. It needs node and `npm ci --prefix scripts/s2-sdk`; without them it
// skips, except under CI=true, where it fails.
func testSDKCompat(t *testing.T, fac Factory) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "scripts", "s2-sdk")
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
	env := startServer(t, fac, withToken(token))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "compat.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"S2_ACCOUNT_ENDPOINT="+env.URL,
		"S2_BASIN_ENDPOINT="+env.URL,
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

// moduleRoot is the nearest directory at or above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("servertest: no go.mod above the working directory")
		}
		dir = parent
	}
}
