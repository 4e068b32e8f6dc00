package objectstore_test

import (
	"context"
	"io"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// TestInstrumentReportsPurpose: every operation is reported with the purpose of the context
// it was made with (a Get's when its body is closed, later), and PurposeOther without one.
func TestInstrumentReportsPurpose(t *testing.T) {
	rec := &recorder{}
	s := objectstore.Instrument(objectstore.NewMemStore(), rec)
	bg := context.Background()
	commit := objectstore.WithPurpose(bg, objectstore.PurposeCommit)
	poll := objectstore.WithPurpose(bg, objectstore.PurposePoll)
	gc := objectstore.WithPurpose(bg, objectstore.PurposeGC)
	if _, err := objectstore.PutBytes(commit, s, "a", []byte("x"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	obj, err := s.Get(objectstore.WithPurpose(bg, objectstore.PurposeFetch), "a", objectstore.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(poll, "a", objectstore.GetOptions{IfNoneMatch: obj.Version}); err == nil {
		t.Fatal("conditional get of the current version succeeded")
	}
	io.ReadAll(obj.Body)
	obj.Body.Close()
	s.Head(bg, "a")
	s.List(gc, "", "", 0)
	s.Delete(gc, "a")
	want := []struct {
		op objectstore.Op
		p  objectstore.Purpose
	}{
		{objectstore.OpPut, objectstore.PurposeCommit},
		{objectstore.OpGet, objectstore.PurposePoll}, // not modified: reported at once
		{objectstore.OpGet, objectstore.PurposeFetch},
		{objectstore.OpHead, objectstore.PurposeOther},
		{objectstore.OpList, objectstore.PurposeGC},
		{objectstore.OpDelete, objectstore.PurposeGC},
	}
	if len(rec.events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(rec.events), len(want), rec.events)
	}
	for i, w := range want {
		if e := rec.events[i]; e.Op != w.op || e.Purpose != w.p {
			t.Errorf("event %d: %s for %q, want %s for %q", i, e.Op, e.Purpose, w.op, w.p)
		}
	}
}

// TestDefaultPurpose: a store with a default purpose labels the requests that carry none,
// and leaves a purpose the caller set alone; it conforms to the Store contract.
func TestDefaultPurpose(t *testing.T) {
	rec := &recorder{}
	s := objectstore.WithDefaultPurpose(objectstore.Instrument(objectstore.NewMemStore(), rec), objectstore.PurposeCommit)
	bg := context.Background()
	if _, err := objectstore.PutBytes(bg, s, "a", []byte("x"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := objectstore.ReadAll(objectstore.WithPurpose(bg, objectstore.PurposeFetch), s, "a"); err != nil {
		t.Fatal(err)
	}
	s.Head(bg, "a")
	s.List(bg, "", "", 0)
	s.Delete(bg, "a")
	want := []objectstore.Purpose{objectstore.PurposeCommit, objectstore.PurposeFetch, objectstore.PurposeCommit, objectstore.PurposeCommit, objectstore.PurposeCommit}
	if len(rec.events) != len(want) {
		t.Fatalf("%d events, want %d", len(rec.events), len(want))
	}
	for i, w := range want {
		if e := rec.events[i]; e.Purpose != w {
			t.Errorf("event %d (%s): purpose %q, want %q", i, e.Op, e.Purpose, w)
		}
	}
}

func TestDefaultPurposeConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		return objectstore.WithDefaultPurpose(objectstore.NewMemStore(), objectstore.PurposeGC)
	})
}
