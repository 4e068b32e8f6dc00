package storetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/azblob"
	"github.com/sluice-dev/sluice/objectstore/gcs"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// EnvGCSURL names the environment variable holding the GCS test bucket's URL, for example
// gs://sluice-test/ci, with STORAGE_EMULATOR_HOST=127.0.0.1:4443 pointing Google's client
// at fake-gcs-server (scripts/test.sh starts one and sets both).
const EnvGCSURL = "SLUICE_TEST_GCS_URL"

// EnvAzureURL names the environment variable holding the Azure test container's URL, for
// example azblob://sluice-test/ci, with AZURE_STORAGE_CONNECTION_STRING naming Azurite
// (scripts/test.sh starts one and sets both).
const EnvAzureURL = "SLUICE_TEST_AZURE_URL"

// CloudURL returns the URL in the environment variable env and its parsed form, which must
// have the scheme scheme. If the variable is unset it skips t, unless CI=true, when it
// fails t.
func CloudURL(t testing.TB, env, scheme string) (string, storeurl.Location) {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set and CI=true: the %s tests must run (use scripts/test.sh)", env, scheme)
		}
		t.Skipf("%s not set; skipping %s tests (scripts/test.sh starts the emulator and sets it)", env, scheme)
	}
	loc, err := storeurl.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	if loc.Scheme != scheme {
		t.Fatalf("%s=%q: want a %s:// URL", env, raw, scheme)
	}
	return raw, loc
}

// GCS returns a store on the bucket named by SLUICE_TEST_GCS_URL under a prefix unique to
// this test, creating the bucket if needed and deleting the test's objects when t ends. It
// skips or fails t as CloudURL does.
func GCS(t testing.TB) objectstore.Store {
	t.Helper()
	_, loc := CloudURL(t, EnvGCSURL, "gs")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func() (objectstore.Store, error) { return gcs.New(ctx, gcs.Config{Bucket: loc.Bucket}) }
	base, err := gcs.New(ctx, gcs.Config{Bucket: loc.Bucket})
	if err != nil {
		t.Fatalf("GCS store for %s: %v", EnvGCSURL, err)
	}
	if err := base.EnsureBucket(ctx, "sluice-test"); err != nil {
		_ = base.Close()
		t.Fatalf("GCS bucket %q: %v", loc.Bucket, err)
	}
	return cloudPrefixed(t, base, loc.Prefix, open)
}

// Azure returns a store on the container named by SLUICE_TEST_AZURE_URL under a prefix
// unique to this test, creating the container if needed and deleting the test's objects
// when t ends. It skips or fails t as CloudURL does.
func Azure(t testing.TB) objectstore.Store {
	t.Helper()
	_, loc := CloudURL(t, EnvAzureURL, "azblob")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func() (objectstore.Store, error) { return azblob.New(loc.AzureConfig()) }
	base, err := azblob.New(loc.AzureConfig())
	if err != nil {
		t.Fatalf("Azure store for %s: %v", EnvAzureURL, err)
	}
	if err := base.EnsureContainer(ctx); err != nil {
		_ = base.Close()
		t.Fatalf("Azure container %q: %v", loc.Bucket, err)
	}
	return cloudPrefixed(t, base, loc.Prefix, open)
}

// cloudPrefixed confines base to a prefix unique to t and, when t ends, deletes what t left
// there through a store of its own (open), since t may have closed base.
func cloudPrefixed(t testing.TB, base objectstore.Store, urlPrefix string, open func() (objectstore.Store, error)) objectstore.Store {
	t.Helper()
	prefix := uniquePrefix(t, urlPrefix)
	st, err := objectstore.WithPrefix(base, prefix)
	if err != nil {
		_ = base.Close()
		t.Fatalf("prefix %q: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = base.Close()
		cl, err := open()
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
