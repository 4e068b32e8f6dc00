package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// InvalidKeys are keys every Store must reject with ErrInvalidKey.
var InvalidKeys = []string{
	"", "/abs", "a//b", "a/", "..", ".", "a/../b", "../x", "a/./b", "a\x00b", "\xff\xfe", "a/..",
}

func (s *suite) invalidKeys(t *testing.T, st objectstore.Store) {
	ctx := ctxFor(t)
	for _, k := range InvalidKeys {
		_, err := st.Get(ctx, k, objectstore.GetOptions{})
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("get %q", k))
		_, err = st.Head(ctx, k)
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("head %q", k))
		_, err = objectstore.PutBytes(ctx, st, k, []byte("x"), objectstore.Unconditional())
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("put %q", k))
		_, err = objectstore.PutBytes(ctx, st, k, []byte("x"), objectstore.IfAbsent())
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("create %q", k))
		err = st.Delete(ctx, k)
		wantClass(t, err, objectstore.ErrInvalidKey, fmt.Sprintf("delete %q", k))
	}
	if got, _ := listKeys(t, st, "", "", 0); len(got) != 0 {
		t.Fatalf("rejected puts left objects: %q", keysOf(got))
	}
}

// bodySizeMismatch: a body shorter or longer than its declared size (or a negative size) is
// refused and leaves nothing behind.
func (s *suite) bodySizeMismatch(t *testing.T, st objectstore.Store) {
	ctx := ctxFor(t)
	_, err := st.Put(ctx, "short", strings.NewReader("abc"), 10, objectstore.Unconditional())
	if err == nil {
		t.Fatal("put of a body shorter than its size succeeded")
	}
	_, err = st.Put(ctx, "long", strings.NewReader("abcdefghijkl"), 10, objectstore.IfAbsent())
	if err == nil {
		t.Fatal("put of a body longer than its size succeeded")
	}
	_, err = st.Put(ctx, "negative", strings.NewReader(""), -1, objectstore.Unconditional())
	if err == nil {
		t.Fatal("put with a negative size succeeded")
	}
	for _, k := range []string{"short", "long", "negative"} {
		_, err := st.Head(ctx, k)
		wantClass(t, err, objectstore.ErrNotFound, "head after a refused put of "+k)
	}
	// A refused put leaves the previous object in place.
	prev := mustPut(t, st, "keep", []byte("previous"), objectstore.Unconditional())
	if _, err := st.Put(ctx, "keep", strings.NewReader("xy"), 5, objectstore.IfMatch(prev.Version)); err == nil {
		t.Fatal("short if-match put succeeded")
	}
	got, info := mustGet(t, st, "keep")
	if string(got) != "previous" {
		t.Fatalf("refused put replaced the object with %q", got)
	}
	checkInfo(t, "after refused put", info, prev)
}

func (s *suite) errorClasses(t *testing.T, st objectstore.Store) {
	ctx := ctxFor(t)
	_, err := st.Get(ctx, "missing", objectstore.GetOptions{})
	wantClass(t, err, objectstore.ErrNotFound, "get missing")
	_, err = st.Head(ctx, "missing")
	wantClass(t, err, objectstore.ErrNotFound, "head missing")
	v := mustPut(t, st, "present", []byte("x"), objectstore.Unconditional())
	_, err = objectstore.PutBytes(ctx, st, "present", []byte("y"), objectstore.IfAbsent())
	wantClass(t, err, objectstore.ErrPreconditionFailed, "create existing")
	_, err = st.Get(ctx, "present", objectstore.GetOptions{IfNoneMatch: v.Version})
	wantClass(t, err, objectstore.ErrNotModified, "get not modified")
	var opErr *objectstore.OpError
	if !errors.As(err, &opErr) || opErr.Op != "get" || !strings.HasSuffix(opErr.Key, "present") {
		t.Fatalf("get not modified: %v is not an *OpError for get of \"present\"", err)
	}
	page, err := st.List(ctx, "nothing-here/", "", 0)
	if err != nil || len(page.Objects) != 0 || page.NextStartAfter != "" {
		t.Fatalf("list of an empty prefix: %+v, %v", page, err)
	}
}

func (s *suite) contextCanceled(t *testing.T, st objectstore.Store) {
	mustPut(t, st, "c", []byte("x"), objectstore.Unconditional())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Get(ctx, "c", objectstore.GetOptions{}); err == nil {
		t.Fatal("get with a canceled context succeeded")
	}
	if _, err := st.Head(ctx, "c"); err == nil {
		t.Fatal("head with a canceled context succeeded")
	}
	if _, err := st.List(ctx, "", "", 0); err == nil {
		t.Fatal("list with a canceled context succeeded")
	}
	_, err := objectstore.PutBytes(ctx, st, "c2", []byte("x"), objectstore.IfAbsent())
	if err == nil {
		t.Fatal("put with a canceled context succeeded")
	}
	if errors.Is(err, objectstore.ErrPreconditionFailed) || errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("put with a canceled context: %v has a misleading class", err)
	}
}

func (s *suite) closed(t *testing.T, st objectstore.Store) {
	mustPut(t, st, "k", []byte("x"), objectstore.Unconditional())
	if err := st.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	ctx := ctxFor(t)
	_, err := st.Get(ctx, "k", objectstore.GetOptions{})
	wantClass(t, err, objectstore.ErrClosed, "get after close")
	_, err = st.Head(ctx, "k")
	wantClass(t, err, objectstore.ErrClosed, "head after close")
	_, err = objectstore.PutBytes(ctx, st, "k", []byte("y"), objectstore.Unconditional())
	wantClass(t, err, objectstore.ErrClosed, "put after close")
	err = st.Delete(ctx, "k")
	wantClass(t, err, objectstore.ErrClosed, "delete after close")
	_, err = st.List(ctx, "", "", 0)
	wantClass(t, err, objectstore.ErrClosed, "list after close")
}
