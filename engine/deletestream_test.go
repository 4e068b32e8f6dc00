package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
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
	st, err := stream.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	store := &failManifestDelete{Store: objectstore.NewMemStore(), key: st.ManifestKey()}
	e, op := withProducer(t, store)
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
	st, err := stream.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	store := &blockDelete{Store: objectstore.NewMemStore(), key: st.ManifestKey(),
		entered: make(chan struct{}), release: make(chan struct{})}
	e, op := withProducer(t, store)
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
	st, err := stream.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	store := &headDeletes{Store: objectstore.NewMemStore(), key: st.ManifestKey()}
	e := newEngine(t, store, nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteStream(ctx, "", "s"); !errors.Is(err, manifest.ErrNotExist) {
		t.Fatalf("DeleteStream of a stream deleted concurrently: %v, want manifest.ErrNotExist", err)
	}
}

// failDataDelete fails the first Delete of a key under prefix.
type failDataDelete struct {
	objectstore.Store
	prefix string
	failed atomic.Bool
}

func (f *failDataDelete) Delete(ctx context.Context, key string) error {
	if strings.HasPrefix(key, f.prefix) && f.failed.CompareAndSwap(false, true) {
		return objectstore.NewOpError("delete", key, nil, errors.New("injected 503"))
	}
	return f.Store.Delete(ctx, key)
}

// What DeleteStream cannot remove (a failed delete here; an upload that lands after the
// deletion likewise) is left to the collector, as its error says: the stream has no manifest
// any more, so catalog.GoneStreams finds it, and a pass over it sweeps its objects once they
// are older than the grace period. Live streams are not listed as gone, and their objects stay.
func TestDeleteStreamLeftoversAreCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, err := stream.Locate("", "s")
		if err != nil {
			t.Fatal(err)
		}
		store := &failDataDelete{Store: objectstore.NewMemStore(), prefix: st.DataPrefix() + "/"}
		cfg := DefaultConfig()
		cfg.Store = store
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close(ctx)
		for _, name := range []string{"s", "kept"} {
			if _, err := e.CreateStream(ctx, "", name, manifest.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Append(ctx, "", name, records(2, "x")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.DeleteStream(ctx, "", "s"); err == nil || !strings.Contains(err.Error(), "collector will retry") {
			t.Fatalf("DeleteStream with a failing object delete: %v", err)
		}
		left := func(prefix string) (keys []string) {
			if err := objectstore.ListAll(ctx, store, prefix, func(o objectstore.ObjectInfo) error {
				keys = append(keys, o.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return keys
		}
		if len(left(st.DataPrefix()+"/")) == 0 {
			t.Fatal("the injected failure left nothing behind")
		}
		gone, err := catalog.GoneStreams(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if len(gone) != 1 || gone[0] != st {
			t.Fatalf("gone streams %+v, want only %+v", gone, st)
		}
		gcfg := gc.DefaultConfig()
		gcfg.GracePeriod, gcfg.CommitDeadline = time.Minute, 30*time.Second
		col, err := gc.NewCollector(store, gcfg)
		if err != nil {
			t.Fatal(err)
		}
		// Within the grace period nothing goes; after it, everything the stream left.
		if _, err := col.Pass(ctx, st); !errors.Is(err, gc.ErrStreamNotFound) {
			t.Fatalf("pass over a deleted stream: %v", err)
		}
		if len(left(st.DataPrefix()+"/")) == 0 {
			t.Fatal("swept within the grace period")
		}
		time.Sleep(2 * time.Minute)
		rep, err := col.Pass(ctx, st)
		if !errors.Is(err, gc.ErrStreamNotFound) || rep.Deleted == 0 {
			t.Fatalf("pass after the grace period: deleted %d, %v", rep.Deleted, err)
		}
		if keys := left(st.DataPrefix() + "/"); len(keys) > 0 {
			t.Fatalf("left after the sweep: %v", keys)
		}
		if gone, err := catalog.GoneStreams(ctx, store); err != nil || len(gone) != 0 {
			t.Fatalf("gone streams after the sweep: %+v, %v", gone, err)
		}
		kept, _ := stream.Locate("", "kept")
		if len(left(kept.DataPrefix()+"/")) == 0 {
			t.Fatal("a live stream's objects went")
		}
	})
}

// withProducer starts an engine on store (the caller closes it) with a stream "s" that has an
// open producer, after one append, and returns the producer.
func withProducer(t *testing.T, store objectstore.Store) (*Engine, *openProducer) {
	t.Helper()
	ctx := context.Background()
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
	defer e.mu.Unlock()
	return e, e.producers[streamKey{"", "s"}]
}

// hookList runs hook once, before the first listing of a key under prefix.
type hookList struct {
	objectstore.Store
	prefix string
	once   sync.Once
	hook   func()
}

func (h *hookList) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	if strings.HasPrefix(prefix, h.prefix) {
		h.once.Do(h.hook)
	}
	return h.Store.List(ctx, prefix, startAfter, limit)
}

// A stream deleted and created again while DeleteStream is still removing the old stream's
// objects: an append acknowledged by the new stream must keep its batch object.
func TestDeleteStreamSparesObjectsOfRecreatedStream(t *testing.T) {
	ctx := context.Background()
	st, err := stream.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	h := &hookList{Store: objectstore.NewMemStore(), prefix: st.DataPrefix() + "/"}
	e := newEngine(t, h, nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "", "s", records(2, "old")); err != nil {
		t.Fatal(err)
	}
	var hookErr error
	h.hook = func() {
		if _, hookErr = e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); hookErr != nil {
			return
		}
		_, hookErr = e.Append(ctx, "", "s", records(3, "new"))
	}
	if _, err := e.DeleteStream(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if hookErr != nil {
		t.Fatalf("recreate and append during the delete: %v", hookErr)
	}
	snap, err := manifest.Open(h, st.ManifestKey()).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Tail.SeqNum != 3 || len(snap.State.Entries) == 0 {
		t.Fatalf("new stream: tail %d, %d entries", snap.State.Tail.SeqNum, len(snap.State.Entries))
	}
	for _, en := range snap.State.Entries {
		if _, err := h.Head(ctx, en.Key); err != nil {
			t.Fatalf("object %s of the new stream's acknowledged append: %v", en.Key, err)
		}
	}
}
