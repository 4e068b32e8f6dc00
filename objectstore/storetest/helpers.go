package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/s3"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// File returns an empty file store in a fresh temporary directory, closed when t ends.
func File(t testing.TB) objectstore.Store {
	t.Helper()
	s, err := file.New(t.TempDir())
	if err != nil {
		t.Fatalf("file store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// EnvS3URL names the environment variable holding the S3 test server's URL, for example
// s3://sluice-test/ci?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true.
// Credentials come from the standard chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...).
const EnvS3URL = "SLUICE_TEST_S3_URL"

// S3URL returns SLUICE_TEST_S3_URL and its parsed form, for a test that needs the URL itself.
// If the variable is unset it skips t, unless CI=true, when it fails t, as it does for a URL
// that is not an s3:// one.
func S3URL(t testing.TB) (string, storeurl.Location) {
	t.Helper()
	raw := os.Getenv(EnvS3URL)
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set and CI=true: the S3 conformance tests must run (use scripts/test.sh)", EnvS3URL)
		}
		t.Skipf("%s not set; skipping S3 tests (scripts/test.sh starts a local versitygw and sets it)", EnvS3URL)
	}
	loc, err := storeurl.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", EnvS3URL, err)
	}
	if loc.Scheme != "s3" {
		t.Fatalf("%s=%q: want an s3:// URL", EnvS3URL, raw)
	}
	return raw, loc
}

// S3 returns a store on the S3-compatible server named by SLUICE_TEST_S3_URL, under a prefix
// unique to this test (the URL's prefix, then the test name and a random suffix). It creates
// the bucket if it does not exist. When t ends, it deletes every object under the prefix and
// closes the store. If SLUICE_TEST_S3_URL is unset it skips t, unless CI=true, when it fails t.
func S3(t testing.TB) objectstore.Store {
	t.Helper()
	_, loc := S3URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, err := s3.New(ctx, loc.S3Config())
	if err != nil {
		t.Fatalf("S3 store for %s: %v", EnvS3URL, err)
	}
	if err := base.EnsureBucket(ctx); err != nil {
		_ = base.Close()
		t.Fatalf("S3 bucket %q: %v", loc.Bucket, err)
	}
	prefix := uniquePrefix(t, loc.Prefix)
	st, err := objectstore.WithPrefix(base, prefix)
	if err != nil {
		_ = base.Close()
		t.Fatalf("prefix %q: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = base.Close()
		// A store of its own: the test may have closed st, which closes base with it.
		cl, err := s3.New(ctx, loc.S3Config())
		if err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
			return
		}
		defer cl.Close()
		err = objectstore.ListAll(ctx, cl, prefix, func(o objectstore.ObjectInfo) error {
			return cl.Delete(ctx, o.Key)
		})
		if err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
		}
	})
	return st
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func uniquePrefix(t testing.TB, base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "_"), "_.")
	if len(name) > 80 {
		name = name[:80]
	}
	p := fmt.Sprintf("%s-%s-%s/", name, time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b[:]))
	if base != "" {
		p = strings.TrimSuffix(base, "/") + "/" + p
	}
	return p
}

// Mem returns an empty in-memory store, closed when t ends.
func Mem(t testing.TB) objectstore.Store {
	t.Helper()
	s := objectstore.NewMemStore()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Backend names a way to get a fresh store in a test.
type Backend struct {
	Name string
	New  func(t testing.TB) objectstore.Store
}

// Backends are mem, file and s3 (s3 skips or fails as S3 does).
var Backends = []Backend{{"mem", Mem}, {"file", File}, {"s3", S3}}

// ForEachBackend runs fn as a subtest per backend, each with a fresh store.
func ForEachBackend(t *testing.T, fn func(t *testing.T, s objectstore.Store)) {
	t.Helper()
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.New(t)) })
	}
}
