package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// TestDelayStoreAddsTheLatencyEachWay: a request through DelayStore takes at least twice
// the delay and reaches the store; a context that ends during the wait ends the request
// with its error; a zero delay returns the store itself.
func TestDelayStoreAddsTheLatencyEachWay(t *testing.T) {
	mem := objectstore.NewMemStore()
	if DelayStore(mem, 0) != objectstore.Store(mem) {
		t.Error("DelayStore with 0: want the store itself")
	}
	const d = 20 * time.Millisecond
	s := DelayStore(mem, d)
	start := time.Now()
	if _, err := objectstore.PutBytes(t.Context(), s, "k", []byte("v"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 2*d {
		t.Errorf("a put took %v: want at least %v", el, 2*d)
	}
	start = time.Now()
	b, _, err := objectstore.ReadAll(t.Context(), s, "k")
	if err != nil || string(b) != "v" {
		t.Fatalf("get = %q, %v: want the object put", b, err)
	}
	if el := time.Since(start); el < 2*d {
		t.Errorf("a get took %v: want at least %v", el, 2*d)
	}
	ctx, cancel := context.WithTimeout(t.Context(), d/2)
	defer cancel()
	if _, err := s.Head(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("head with a context ending during the wait = %v, want its error", err)
	}
}
