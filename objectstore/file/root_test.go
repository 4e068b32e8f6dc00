//go:build unix

package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
)

// A file store whose directory is removed under it fails every operation with ErrNoBucket
// (cause ErrRootMissing): it is not an empty store, and its objects are not missing ones.
func TestFileRootRemovedIsNoBucket(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "a/b", strings.NewReader("x"), 1, objectstore.PutCondition{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, objectstore.ErrNoBucket) || !errors.Is(err, file.ErrRootMissing) || errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("%s after the directory was removed: %v, want ErrNoBucket (ErrRootMissing)", op, err)
		}
	}
	_, err = s.Get(ctx, "a/b", objectstore.GetOptions{})
	check("get", err)
	_, err = s.Head(ctx, "a/b")
	check("head", err)
	_, err = s.List(ctx, "", "", 10)
	check("list", err)
	_, err = s.List(ctx, "a/", "", 10)
	check("list a/", err)
	_, err = s.Put(ctx, "c", strings.NewReader("y"), 1, objectstore.PutCondition{IfAbsent: true})
	check("put", err)
	check("delete", s.Delete(ctx, "a/b"))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the store made its directory again: %v", err)
	}
	// An empty directory in its place is not the store either (its .sluice-tmp is gone).
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = s.List(ctx, "", "", 10)
	check("list of an empty directory in its place", err)
}
