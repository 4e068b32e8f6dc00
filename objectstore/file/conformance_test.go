//go:build unix

package file_test

import (
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func TestFileConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store { return storetest.File(t) })
}

// newFileStore opens a file store on dir, closed when t ends.
func newFileStore(t *testing.T, dir string) *file.Store {
	t.Helper()
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
