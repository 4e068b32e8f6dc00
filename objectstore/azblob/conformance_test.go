package azblob_test

import (
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/azblob"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// TestAzureConformance runs the suite against the container in SLUICE_TEST_AZURE_URL
// (scripts/test.sh starts Azurite and sets it, with AZURE_STORAGE_CONNECTION_STRING).
func TestAzureConformance(t *testing.T) {
	opts := storetest.Options{RefusedKeys: func(k string) bool { return azblob.ValidateKey(k) != nil }}
	storetest.RunWith(t, opts, func(t *testing.T) objectstore.Store { return storetest.Azure(t) })
}
