package objectstore_test

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// Keys written through a prefixed store live under the prefix of the underlying store.
func TestWithPrefix(t *testing.T) {
	ctx := context.Background()
	inner := objectstore.NewMemStore()
	s, err := objectstore.WithPrefix(inner, "streams/x/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, s, "a/b", []byte("1"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, inner, "streams/xy", []byte("outside"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Head(ctx, "streams/x/a/b"); err != nil {
		t.Fatalf("inner key: %v", err)
	}
	page, err := s.List(ctx, "", "", 0)
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "a/b" {
		t.Fatalf("prefixed listing: %+v, %v", page, err)
	}
	for _, bad := range []string{"/x", "a//b", ".."} {
		if _, err := objectstore.WithPrefix(inner, bad); err == nil {
			t.Errorf("WithPrefix(%q) accepted", bad)
		}
	}
	if same, _ := objectstore.WithPrefix(inner, ""); same != objectstore.Store(inner) {
		t.Error("empty prefix should return the store itself")
	}
}

func TestPrefixConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		s, err := objectstore.WithPrefix(objectstore.NewMemStore(), "some/prefix")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
