package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// TestAppendAsyncRetriesOnFreshProducer: AppendAsync, like Append, means to retry a
// handover refused with ErrGenerationChanged (or producer.ErrClosed) once on a fresh producer,
// so the first input of an append session succeeds where a unary append in the same state
// does (the refusal must not mark the chain failed, which would refuse the retry with
// ErrPrecedingAppendFailed).
//
// The state: the stream was deleted and created again by another engine on the same store;
// this engine's cached producer learnt it from an append whose caller had gone (its wait
// ended first, so nothing evicted the producer): the producer is fatal and still cached.
func TestAppendAsyncRetriesOnFreshProducer(t *testing.T) {
	ctx := t.Context()
	store := objectstore.NewMemStore()
	e := newEngine(t, store, nil)
	e2 := newEngine(t, store, nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	in := func(b string) batchfmt.AppendInput {
		return batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(b)}}}
	}
	if _, err := e.Append(ctx, "", "s", in("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.DeleteStream(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	// A unary append whose client gives up before the commit.
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	_, err := e.Append(short, "", "s", in("gone"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Skipf("the short append ended with %v, not its deadline", err)
	}
	e.mu.Lock()
	op := e.producers[streamKey{"", "s"}]
	e.mu.Unlock()
	if op == nil {
		t.Fatal("producer not cached")
	}
	_ = op.p.Flush(ctx) // until its batch has resolved (failed: generation changed)

	wait, err := e.AppendAsync(ctx, "", "s", in("session first"), new(producer.Chain))
	if err != nil {
		// What Append does in the same state: it succeeds on a fresh producer.
		_, uerr := e.Append(ctx, "", "s", in("unary"))
		t.Fatalf("first input of a session: %v (a unary append now: %v)", err, uerr)
	}
	if _, err := wait(ctx); err != nil {
		t.Fatalf("first input of a session: wait: %v", err)
	}
}
