package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

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
	st, err := catalog.Locate("", "s")
	if err != nil {
		t.Fatal(err)
	}
	h := &hookList{Store: objectstore.NewMemStore(), prefix: st.DataPrefix + "/"}
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
	snap, err := manifest.Load(ctx, h, st.ManifestPath)
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
