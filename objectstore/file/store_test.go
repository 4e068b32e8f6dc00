//go:build unix

package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func TestFileConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store { return storetest.File(t) })
}

func newFileStore(t *testing.T, dir string) *file.Store {
	t.Helper()
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

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

func TestFileSharedDirectory(t *testing.T) {
	// Two stores on one directory see each other's writes and conditions.
	dir := t.TempDir()
	a, b := newFileStore(t, dir), newFileStore(t, dir)
	ctx := context.Background()
	v, err := objectstore.PutBytes(ctx, a, "k", []byte("1"), objectstore.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, b, "k", []byte("2"), objectstore.IfAbsent()); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("create-only through the second store: %v", err)
	}
	if _, err := objectstore.PutBytes(ctx, b, "k", []byte("2"), objectstore.IfMatch(v.Version)); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, a, "k", []byte("3"), objectstore.IfMatch(v.Version)); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("stale if-match through the first store: %v", err)
	}
}

const (
	envCASChild = "SLUICE_FILESTORE_CAS_CHILD"
	casKey      = "counter"
)

// TestFileMultiProcessCAS runs several OS processes (this test binary, re-executed) that each
// increment one counter object with If-Match and retry; no increment may be lost.
func TestFileMultiProcessCAS(t *testing.T) {
	if os.Getenv(envCASChild) != "" {
		return // the child's work happens in TestMain-free fashion below
	}
	const procs, increments = 4, 40
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	if _, err := objectstore.PutBytes(ctx, s, casKey, []byte("0"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	cmds := make([]*exec.Cmd, procs)
	outs := make([]strings.Builder, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFileCASChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCASChild+"="+dir, "SLUICE_CAS_INCREMENTS="+strconv.Itoa(increments))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i].String())
		}
	}
	if t.Failed() {
		return
	}
	data, _, err := objectstore.ReadAll(ctx, s, casKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), strconv.Itoa(procs*increments); got != want {
		t.Fatalf("counter is %s after %d processes x %d increments, want %s", got, procs, increments, want)
	}
	for i := range outs {
		t.Logf("child %d: %s", i, strings.TrimSpace(outs[i].String()))
		if !strings.Contains(outs[i].String(), "cas-child-done") {
			t.Fatalf("child %d did not report completion:\n%s", i, outs[i].String())
		}
	}
}

// TestFileCASChild is the child half of TestFileMultiProcessCAS; it does nothing unless started
// by it.
func TestFileCASChild(t *testing.T) {
	dir := os.Getenv(envCASChild)
	if dir == "" {
		t.Skip("child process of TestFileMultiProcessCAS only")
	}
	n, err := strconv.Atoi(os.Getenv("SLUICE_CAS_INCREMENTS"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	conflicts := 0
	for done := 0; done < n; {
		data, info, err := objectstore.ReadAll(ctx, s, casKey)
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.Atoi(string(data))
		if err != nil {
			t.Fatalf("counter holds %q: %v", data, err)
		}
		_, err = objectstore.PutBytes(ctx, s, casKey, []byte(strconv.Itoa(v+1)), objectstore.IfMatch(info.Version))
		switch {
		case err == nil:
			done++
		case errors.Is(err, objectstore.ErrPreconditionFailed):
			conflicts++
		default:
			t.Fatal(err)
		}
	}
	fmt.Printf("cas-child-done pid %d conflicts %d\n", os.Getpid(), conflicts)
}

// TestFileEmptyTreeRemovedConcurrently puts over a tree of empty directories while deletes
// of absent keys below it remove parts of the tree (a delete removes the directories it
// leaves empty): directories vanishing under the put's removal are no conflict.
func TestFileEmptyTreeRemovedConcurrently(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	for round := range 40 {
		key := fmt.Sprintf("r%d/x", round)
		for i := range 20 {
			if err := os.MkdirAll(filepath.Join(dir, key, "e", fmt.Sprint(i)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				s.Delete(ctx, fmt.Sprintf("%s/e/%d/none", key, i))
			}
		}()
		_, err := objectstore.PutBytes(ctx, s, key, []byte("v"), objectstore.Unconditional())
		wg.Wait()
		if err != nil {
			t.Fatalf("round %d: put %q over empty directories being removed: %v", round, key, err)
		}
	}
}

// TestFilePutParentVsChildRace puts "rN/x" (over a tree of empty directories) and
// "rN/x/y/z" at the same time: not both succeed, a failure is a key conflict, and the put
// that succeeds reads back (removing empty directories never removes a file).
func TestFilePutParentVsChildRace(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	for round := range 100 {
		parent, child := fmt.Sprintf("r%d/x", round), fmt.Sprintf("r%d/x/y/z", round)
		if err := os.MkdirAll(filepath.Join(dir, parent, "e"), 0o755); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var errP, errC error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, errP = objectstore.PutBytes(ctx, s, parent, []byte("p"), objectstore.Unconditional())
		}()
		go func() {
			defer wg.Done()
			_, errC = objectstore.PutBytes(ctx, s, child, []byte("c"), objectstore.IfAbsent())
		}()
		wg.Wait()
		if errP == nil && errC == nil {
			t.Fatalf("round %d: both puts succeeded", round)
		}
		if errP != nil && errC != nil {
			t.Logf("round %d: both puts failed: %v; %v", round, errP, errC)
		}
		for _, c := range []struct {
			key  string
			err  error
			body string
		}{{parent, errP, "p"}, {child, errC, "c"}} {
			if c.err != nil {
				if !errors.Is(c.err, file.ErrKeyConflict) {
					t.Errorf("round %d: put %q: %v (not a key conflict)", round, c.key, c.err)
				}
				continue
			}
			if got, _, err := objectstore.ReadAll(ctx, s, c.key); err != nil || string(got) != c.body {
				t.Fatalf("round %d: %q after its put: %q, %v", round, c.key, got, err)
			}
		}
	}
}
