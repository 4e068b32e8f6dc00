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
	crashCloud(t, loc)
}

// TestCrashAzure is TestCrashGCS on the Azure Blob Storage emulator of
// SLUICE_TEST_AZURE_URL (Azurite).
func TestCrashAzure(t *testing.T) {
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
	crashCloud(t, loc)
}

// crashCloud runs the cycles under a new prefix of loc, then again with a committer.
func crashCloud(t *testing.T, loc storeurl.Location) {
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
	runCrash(t, storeURL, false)
	sub := loc
	sub.Prefix += "/committer" // under the prefix removed afterwards
	t.Run("committer", func(t *testing.T) { runCrash(t, sub.String(), true) })
}
