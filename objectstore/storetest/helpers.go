package storetest

import (
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// File returns an empty file store in a fresh temporary directory, closed when t ends.
func File(t testing.TB) objectstore.Store {
	t.Helper()
	s, err := objectstore.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatalf("file store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
