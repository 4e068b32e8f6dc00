package crashtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore/azblob"
	"github.com/sluice-dev/sluice/objectstore/gcs"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// TestCrashGCS runs the crash cycles, without and with a committer daemon, against the
// Google Cloud Storage emulator of SLUICE_TEST_GCS_URL (fake-gcs-server, from
// scripts/test.sh), under a prefix of its own (removed afterwards).
func TestCrashGCS(t *testing.T) {
	crashCloud(t, gcsCrashURL(t))
}

// TestCrashAzure is TestCrashGCS on the Azure Blob Storage emulator of
// SLUICE_TEST_AZURE_URL (Azurite).
func TestCrashAzure(t *testing.T) {
	crashCloud(t, azureCrashURL(t))
}

// gcsCrashURL is a store URL under a new prefix of SLUICE_TEST_GCS_URL (removed when t
// ends), its bucket made; t is skipped without the variable, and failed under CI=true.
func gcsCrashURL(t *testing.T) string {
	_, loc := storetest.CloudURL(t, storetest.EnvGCSURL, "gs")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := gcs.New(ctx, gcs.Config{Bucket: loc.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureBucket(ctx, "sluice-test"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	return cloudCrashURL(t, loc)
}

// azureCrashURL is gcsCrashURL for SLUICE_TEST_AZURE_URL, its container made.
func azureCrashURL(t *testing.T) string {
	_, loc := storetest.CloudURL(t, storetest.EnvAzureURL, "azblob")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := azblob.New(loc.AzureConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureContainer(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	return cloudCrashURL(t, loc)
}

// cloudCrashURL is the URL of a new prefix of loc, whose objects are removed when t ends.
func cloudCrashURL(t *testing.T, loc storeurl.Location) string {
	loc.Prefix = fmt.Sprintf("%s/crashtest-%d-%d", loc.Prefix, time.Now().UnixNano(), os.Getpid())
	if loc.Prefix[0] == '/' {
		loc.Prefix = loc.Prefix[1:]
	}
	storeURL := loc.String()
	t.Cleanup(func() {
		if err := removeAll(storeURL); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return storeURL
}

// crashCloud runs the cycles on the store at storeURL, then again with a committer under a
// prefix of it.
func crashCloud(t *testing.T, storeURL string) {
	loc, err := storeurl.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	runCrash(t, storeURL, plain)
	loc.Prefix += "/committer" // under the prefix removed afterwards
	t.Run("committer", func(t *testing.T) { runCrash(t, loc.String(), withCommitter) })
}
