package journal_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
)

// getCounter counts the reads that reach a store.
type getCounter struct {
	objectstore.Store
	gets atomic.Int64
}

func (s *getCounter) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key, opts)
}

func window(t *testing.T, id journal.ID, n uint64, body string) (journal.Header, []byte) {
	t.Helper()
	h := journal.Header{Kind: journal.KindWindow, Journal: id, Number: n, Nonce: [16]byte{byte(n)}}
	obj, err := journal.Encode(h, []journal.Section{{Manifest: "s/manifest", FirstSeq: n, NextSeq: n + 1, Data: []byte(body)}})
	if err != nil {
		t.Fatal(err)
	}
	return h, obj
}

// TestCacheAnswersReadsOfWindowsWrittenThroughIt: windows written through the cache are read
// back (index and sections, by range) with no store request, the same bytes as the store
// holds; other keys, and windows the cache never saw, are read from the store.
func TestCacheAnswersReadsOfWindowsWrittenThroughIt(t *testing.T) {
	ctx := context.Background()
	inner := &getCounter{Store: objectstore.NewMemStore()}
	c := journal.NewCache(inner, 1<<20)
	const id = journal.ID(7)
	for n := uint64(0); n < 3; n++ {
		h, obj := window(t, id, n, strings.Repeat("x", int(n)+1))
		if err := journal.Write(ctx, c, h, obj); err != nil {
			t.Fatal(err)
		}
	}
	end, fenced, err := journal.Walk(ctx, c, id, 0, func(h journal.Header, rows []journal.IndexRow) error {
		data, err := journal.ReadSection(ctx, c, journal.Key(id, h.Number), rows[0])
		if err != nil {
			return err
		}
		if want := strings.Repeat("x", int(h.Number)+1); string(data) != want {
			t.Errorf("window %d section %q, want %q", h.Number, data, want)
		}
		return nil
	})
	if err != nil || end != 3 || fenced {
		t.Fatalf("walk: end %d fenced %v err %v", end, fenced, err)
	}
	// The walk's last read, of the missing number 3, reaches the store; nothing else does.
	if got := inner.gets.Load(); got != 1 {
		t.Fatalf("%d store reads for windows written through the cache, want 1 (the missing one)", got)
	}
	for n := uint64(0); n < 3; n++ {
		fromCache, _, err := objectstore.ReadAll(ctx, c, journal.Key(id, n))
		if err != nil {
			t.Fatal(err)
		}
		fromStore, _, err := objectstore.ReadAll(ctx, inner.Store, journal.Key(id, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fromCache, fromStore) {
			t.Fatalf("window %d: the cache's bytes differ from the store's", n)
		}
	}
	if c.Hits() == 0 {
		t.Fatal("no cache hit counted")
	}
	before := inner.gets.Load()
	if _, err := objectstore.PutBytes(ctx, c, "s/manifest", []byte("m"), objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := objectstore.ReadAll(ctx, c, "s/manifest"); err != nil {
		t.Fatal(err)
	}
	h, obj := window(t, id, 3, "y")
	if err := journal.Write(ctx, inner.Store, h, obj); err != nil { // another process's window
		t.Fatal(err)
	}
	if _, _, err := journal.ReadIndex(ctx, c, journal.Key(id, 3)); err != nil {
		t.Fatal(err)
	}
	if got := inner.gets.Load() - before; got != 2 {
		t.Fatalf("%d store reads for a manifest and a window written elsewhere, want 2", got)
	}
	// The index of a window written elsewhere, once read, is kept: walks by other streams
	// of the process read it from memory.
	for range 3 {
		if _, _, err := journal.ReadIndex(ctx, c, journal.Key(id, 3)); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.gets.Load() - before; got != 2 {
		t.Fatalf("%d store reads after reading a window's index 4 times, want 2 (the first time only)", got)
	}
	if data, err := journal.ReadSection(ctx, c, journal.Key(id, 3), mustRow(t, c, id, 3)); err != nil || string(data) != "y" {
		t.Fatalf("section of a window whose index is kept: %q, %v", data, err)
	}
}

func mustRow(t *testing.T, s objectstore.Store, id journal.ID, n uint64) journal.IndexRow {
	t.Helper()
	_, rows, err := journal.ReadIndex(context.Background(), s, journal.Key(id, n))
	if err != nil || len(rows) != 1 {
		t.Fatalf("index of window %d: %v rows, %v", n, len(rows), err)
	}
	return rows[0]
}

// TestCacheForgetsTheOldestPastItsBound: past its bound the cache drops its oldest windows
// (read from the store again), and a deleted window is gone from both.
func TestCacheForgetsTheOldestPastItsBound(t *testing.T) {
	ctx := context.Background()
	inner := &getCounter{Store: objectstore.NewMemStore()}
	_, probe := window(t, 1, 0, strings.Repeat("z", 100))
	c := journal.NewCache(inner, int64(2*len(probe))) // room for two windows
	for n := uint64(0); n < 3; n++ {
		h, obj := window(t, 1, n, strings.Repeat("z", 100))
		if err := journal.Write(ctx, c, h, obj); err != nil {
			t.Fatal(err)
		}
	}
	read := func(n uint64) int64 {
		before := inner.gets.Load()
		if _, _, err := objectstore.ReadAll(ctx, c, journal.Key(1, n)); err != nil {
			t.Fatal(err)
		}
		return inner.gets.Load() - before
	}
	if read(0) != 1 {
		t.Fatal("the oldest window was kept past the bound")
	}
	if read(1) != 0 || read(2) != 0 {
		t.Fatal("the newest windows were not kept")
	}
	if err := c.Delete(ctx, journal.Key(1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := objectstore.ReadAll(ctx, c, journal.Key(1, 2)); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("a deleted window read back: %v", err)
	}
}
