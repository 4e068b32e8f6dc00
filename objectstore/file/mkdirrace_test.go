//go:build unix

package file_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

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
