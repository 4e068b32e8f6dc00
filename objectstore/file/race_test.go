//go:build unix

package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
)

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

// TestFilePutRacingSiblingDelete: puts and deletes of *different* keys under a common
// nested directory. Every put is create-only on a key that is absent (each goroutine owns its
// key and deletes it before writing it again), so every put must succeed, though a Delete may
// remove an outer directory between two of the put's Mkdir calls (publish retries; it once
// failed the put with ENOENT from the inner Mkdir).
func TestFilePutRacingSiblingDelete(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	const workers = 8
	const rounds = 400
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			key := fmt.Sprintf("x/y/k%02d", w)
			for i := 0; i < rounds && failed.Load() == nil; i++ {
				if _, err := objectstore.PutBytes(ctx, s, key, []byte("v"), objectstore.IfAbsent()); err != nil {
					failed.CompareAndSwap(nil, fmt.Sprintf("create-only put of absent key %q (iteration %d): %v", key, i, err))
					return
				}
				if err := s.Delete(ctx, key); err != nil {
					failed.CompareAndSwap(nil, fmt.Sprintf("delete %q: %v", key, err))
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		t.Fatal(msg)
	}
}
