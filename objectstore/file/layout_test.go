//go:build unix

package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
)

func TestFileLayoutAndHiddenFiles(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	if _, err := objectstore.PutBytes(ctx, s, "a/b", []byte("hello"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 24+5 || string(raw[:7]) != "SLUICEO" || raw[7] != 1 || string(raw[24:]) != "hello" {
		t.Fatalf("object file holds %q, want the 24-byte header then the body", raw)
	}
	// Temp and lock files exist but are never listed.
	if _, err := os.Stat(filepath.Join(dir, ".sluice-tmp", "locks")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".sluice-tmp", "put-stray"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "a/b" {
		t.Fatalf("listing shows %+v, want only a/b", page.Objects)
	}
	for _, k := range []string{".sluice-tmp", ".sluice-tmp/locks/00", ".sluice-tmp/x"} {
		if _, err := s.Head(ctx, k); !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Fatalf("head %q: %v, want ErrInvalidKey", k, err)
		}
		if _, err := objectstore.PutBytes(ctx, s, k, nil, objectstore.Unconditional()); !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Fatalf("put %q: %v, want ErrInvalidKey", k, err)
		}
	}
	if page, err := s.List(ctx, ".sluice-tmp/", "", 0); err != nil || len(page.Objects) != 0 {
		t.Fatalf("list of the reserved dir: %+v, %v", page, err)
	}
	// Deleting the last object removes the directories it leaves empty.
	if err := s.Delete(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatalf("empty directory a left behind: %v", err)
	}
}

// TestFileEmptyDirectoryFreesKey puts objects where trees of empty directories were left (as
// a failed put or a crash leaves them), with and without conditions: they hold no key, so
// the put succeeds and the object reads back; If-Match still finds no object there. A key
// under such a directory still conflicts.
func TestFileEmptyDirectoryFreesKey(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	for i, cond := range []objectstore.PutCondition{objectstore.Unconditional(), objectstore.IfAbsent(), objectstore.IfMatch(`"v"`)} {
		key := fmt.Sprintf("k%d/x", i)
		if err := os.MkdirAll(filepath.Join(dir, key, "empty", "deeper"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := objectstore.PutBytes(ctx, s, key, []byte("body"), cond)
		if cond.IfMatch != "" {
			if !errors.Is(err, objectstore.ErrPreconditionFailed) {
				t.Fatalf("put %q If-Match over an empty directory: %v, want ErrPreconditionFailed", key, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("put %q (%+v) over empty directories: %v", key, cond, err)
		}
		if got, _, err := objectstore.ReadAll(ctx, s, key); err != nil || string(got) != "body" {
			t.Fatalf("read %q back: %q, %v", key, got, err)
		}
	}
	// A key deep under the directory, beside empty ones, is a key: the conflict stands and
	// the key is kept.
	if err := os.MkdirAll(filepath.Join(dir, "deep", "x", "a", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, s, "deep/x/y/z", []byte("kept"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	for _, cond := range []objectstore.PutCondition{objectstore.Unconditional(), objectstore.IfAbsent()} {
		if _, err := objectstore.PutBytes(ctx, s, "deep/x", []byte("no"), cond); !errors.Is(err, file.ErrKeyConflict) {
			t.Fatalf("put deep/x over deep/x/y/z (%+v): %v, want ErrKeyConflict", cond, err)
		}
	}
	if got, _, err := objectstore.ReadAll(ctx, s, "deep/x/y/z"); err != nil || string(got) != "kept" {
		t.Fatalf("deep/x/y/z after the refused puts: %q, %v", got, err)
	}
}

func TestFileKeyConflict(t *testing.T) {
	s := newFileStore(t, t.TempDir())
	ctx := context.Background()
	if _, err := objectstore.PutBytes(ctx, s, "a/b", []byte("x"), objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	for _, cond := range []objectstore.PutCondition{objectstore.Unconditional(), objectstore.IfAbsent()} {
		_, err := objectstore.PutBytes(ctx, s, "a", []byte("y"), cond)
		if !errors.Is(err, file.ErrKeyConflict) || errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Fatalf("put a over directory a/ (%+v): %v, want ErrKeyConflict only", cond, err)
		}
		_, err = objectstore.PutBytes(ctx, s, "a/b/c", []byte("y"), cond)
		if !errors.Is(err, file.ErrKeyConflict) {
			t.Fatalf("put a/b/c under object a/b (%+v): %v, want ErrKeyConflict", cond, err)
		}
	}
	if _, err := s.Head(ctx, "a"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("head of a directory: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("delete of a directory name: %v", err)
	}
	if _, _, err := objectstore.ReadAll(ctx, s, "a/b"); err != nil {
		t.Fatalf("a/b after deleting \"a\": %v", err)
	}
}

func TestFileCorruptObject(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	for name, content := range map[string]string{"foreign": "not an object at all, long enough", "short": "SLU"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, name, objectstore.GetOptions{}); !errors.Is(err, objectstore.ErrCorrupt) {
			t.Fatalf("get %s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := s.List(ctx, "", "", 0); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("list over a foreign file: %v, want ErrCorrupt", err)
	}
}
