package gcs_test

import (
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// TestGCSConformance runs the suite against the bucket in SLUICE_TEST_GCS_URL (scripts/test.sh
// starts fake-gcs-server and sets it, with STORAGE_EMULATOR_HOST).
func TestGCSConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store { return storetest.GCS(t) })
}
