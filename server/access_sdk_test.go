package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/server"
)

// TestAccessTokensThroughS2SDK runs scripts/s2-sdk/access.mjs, which drives S2's TypeScript
// SDK against a server with access tokens: the root token issues scoped tokens, and each is
// held to its scope, revoked and expired ones are refused, listings show no secret. It needs
// node and `npm ci --prefix scripts/s2-sdk`; without them it skips, except under CI=true.
func TestAccessTokensThroughS2SDK(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "scripts", "s2-sdk"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("SDK access check cannot run under CI: %s (run `npm ci --prefix scripts/s2-sdk`)", why)
		}
		t.Skipf("skipping SDK access check: %s (run `npm ci --prefix scripts/s2-sdk`)", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@s2-dev", "streamstore", "package.json")); err != nil {
		missing("SDK not installed")
	}

	st := objectstore.NewMemStore()
	cfg := engine.DefaultConfig()
	cfg.Store = st
	cfg.LagInterval = 0
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	az, err := access.New(st, accessRoot)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(eng.S2(), server.WithAccess(az))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(ln.Addr().String()) // HTTP/1.1 and h2c, as the SDK's sessions need
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		_ = srv.Close()
		_ = eng.Close(context.Background())
	})

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "access.mjs")
	cmd.Dir = dir
	url := "http://" + ln.Addr().String()
	cmd.Env = append(os.Environ(), "S2_ACCOUNT_ENDPOINT="+url, "S2_BASIN_ENDPOINT="+url, "S2_ACCESS_TOKEN="+accessRoot)
	out, err := cmd.CombinedOutput()
	t.Logf("access.mjs output:\n%s", out)
	if err != nil {
		t.Fatalf("access.mjs failed: %v", err)
	}
	if !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatal("access.mjs did not report a clean summary")
	}
}
