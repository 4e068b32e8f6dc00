package storetest_test

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func TestForEachBackend(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, s objectstore.Store) {
		ctx := context.Background()
		v, err := objectstore.PutBytes(ctx, s, "hello", []byte("world"), objectstore.IfAbsent())
		if err != nil {
			t.Fatal(err)
		}
		data, info, err := objectstore.ReadAll(ctx, s, "hello")
		if err != nil || string(data) != "world" || info.Version != v.Version {
			t.Fatalf("read %q %+v %v", data, info, err)
		}
		page, err := s.List(ctx, "", "", 0)
		if err != nil || len(page.Objects) != 1 {
			t.Fatalf("fresh store lists %+v, %v", page.Objects, err)
		}
	})
}
