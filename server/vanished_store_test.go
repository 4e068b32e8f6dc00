//go:build unix

package server_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/server"
)

// A file store's directory removed under a running server: every call that needs the store
// is a storage failure (5xx), never a missing basin or stream (4xx), nor an empty listing.
func TestVanishedFileStoreIsAStorageFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	store, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.DefaultConfig()
	cfg.Store = store
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(eng.S2())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(ctx)
	}()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/basins", `{"basin":"` + fuzzBasin + `"}`},
		{"POST", "/v1/streams", `{"stream":"s"}`},
		{"POST", "/v1/streams/s/records", `{"records":[{"body":"one"}]}`},
	} {
		if rec := serve(srv, c.method, c.path, c.body, nil); rec.Code/100 != 2 {
			t.Fatalf("setup %s %s: %d %s", c.method, c.path, rec.Code, rec.Body.String())
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/basins", ""},
		{"GET", "/v1/basins/" + fuzzBasin, ""},
		{"GET", "/v1/streams", ""},
		{"GET", "/v1/streams/s", ""},
		{"GET", "/v1/streams/s/records?seq_num=0", ""},
		{"GET", "/v1/streams/s/records/tail", ""},
		{"GET", "/v1/streams/other/records?seq_num=0", ""},
		{"POST", "/v1/streams", `{"stream":"t"}`},
		{"POST", "/v1/basins", `{"basin":"another-basin"}`},
	} {
		rec := serve(srv, c.method, c.path, c.body, nil)
		if rec.Code/100 != 5 || strings.Contains(rec.Body.String(), "not_found") {
			t.Errorf("%s %s with the store's directory gone: %d %s, want a 5xx storage error", c.method, c.path, rec.Code, rec.Body.String())
		}
	}
	// An append is retried until the delivery timeout, and then fails with the store's
	// refusal.
	req := httptest.NewRequest("POST", "/v1/streams/s/records", strings.NewReader(`{"records":[{"body":"two"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("S2-Basin", fuzzBasin)
	ctx, cancel := context.WithTimeout(req.Context(), engine.DefaultDeliveryTimeout+10*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req.WithContext(ctx))
	if rec.Code/100 != 5 || !strings.Contains(rec.Body.String(), "no_bucket") {
		t.Errorf("append with the store's directory gone: %d %s, want a 5xx naming no_bucket", rec.Code, rec.Body.String())
	}
}
