package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// failManifestDelete fails the first Delete of one key.
type failManifestDelete struct {
	objectstore.Store
	key    string
	failed atomic.Bool
}

func (f *failManifestDelete) Delete(ctx context.Context, key string) error {
	if key == f.key && f.failed.CompareAndSwap(false, true) {
		return objectstore.NewOpError("delete", key, nil, errors.New("injected 503"))
	}
	return f.Store.Delete(ctx, key)
}

// DeleteStream takes the stream's producer out of the engine's table before it deletes the
// manifest, and must close it even when that delete fails: nothing else owns it any more
// (neither the idle janitor nor Engine.Close can see it), and it would outlive the engine,
// accepting and committing appends.
func TestDeleteStreamFailureClosesProducer(t *testing.T) {
	ctx := context.Background()
	st, err := catalog.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	store := &failManifestDelete{Store: objectstore.NewMemStore(), key: st.ManifestPath}
	cfg := DefaultConfig()
	cfg.Store = store
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "", "s", records(1, "a")); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	op := e.producers[streamKey{"", "s"}]
	e.mu.Unlock()
	if op == nil {
		t.Fatal("no producer after an append")
	}
	if _, err := e.DeleteStream(ctx, "", "s"); err == nil {
		t.Fatal("DeleteStream succeeded despite the injected manifest delete failure")
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// After Engine.Close every producer it opened must be closed.
	_, err = op.p.Append(ctx, records(1, "after-close"))
	if !errors.Is(err, producer.ErrClosed) {
		_ = op.p.Close(ctx) // clean up the leaked producer
		t.Fatalf("producer opened by the engine still accepts appends after Engine.Close (err %v): "+
			"DeleteStream dropped it from the table without closing it when the manifest delete failed", err)
	}
}

// blockDelete blocks the first Delete of one key until release is closed.
type blockDelete struct {
	objectstore.Store
	key     string
	once    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (b *blockDelete) Delete(ctx context.Context, key string) error {
	if key == b.key && b.once.CompareAndSwap(false, true) {
		close(b.entered)
		<-b.release
	}
	return b.Store.Delete(ctx, key)
}

// Engine.Close owns the producers still in e.producers and waits for the closes already
// started. DeleteStream takes the stream's producer out of the table and starts its close
// under the same lock, so a Close that runs while DeleteStream deletes the manifest waits for
// that producer; it once returned while the producer was still open and running.
func TestCloseDuringDeleteStreamClosesProducer(t *testing.T) {
	ctx := context.Background()
	st, err := catalog.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	store := &blockDelete{Store: objectstore.NewMemStore(), key: st.ManifestPath,
		entered: make(chan struct{}), release: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.Store = store
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "", "s", records(1, "a")); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	op := e.producers[streamKey{"", "s"}]
	e.mu.Unlock()
	done := make(chan error, 1)
	go func() { _, err := e.DeleteStream(ctx, "", "s"); done <- err }()
	<-store.entered
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, appendErr := op.p.Append(ctx, records(1, "after-close"))
	close(store.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(appendErr, producer.ErrClosed) {
		t.Fatalf("Engine.Close returned while a producer it opened was still open (append after Close: err %v)", appendErr)
	}
}

// headDeletes deletes key just before the first Head of it (another DeleteStream winning).
type headDeletes struct {
	objectstore.Store
	key  string
	once atomic.Bool
}

func (h *headDeletes) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if key == h.key && h.once.CompareAndSwap(false, true) {
		_ = h.Store.Delete(ctx, key)
	}
	return h.Store.Head(ctx, key)
}

// Two deletes of one stream (or DeleteBasin racing a DeleteStream): the loser loads the
// manifest, the winner deletes it, and the loser's Head of it finds nothing. That is
// manifest.ErrNotExist, which DeleteBasin tolerates (streams deleted meanwhile), not a
// storage error.
func TestConcurrentDeleteStreamNotExist(t *testing.T) {
	ctx := context.Background()
	st, err := catalog.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	store := &headDeletes{Store: objectstore.NewMemStore(), key: st.ManifestPath}
	e := newEngine(t, store, nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteStream(ctx, "", "s"); !errors.Is(err, manifest.ErrNotExist) {
		t.Fatalf("DeleteStream of a stream deleted concurrently: %v, want manifest.ErrNotExist", err)
	}
}
