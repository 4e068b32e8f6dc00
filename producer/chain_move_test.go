package producer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestChainMovesToAnotherProducer: a chain's append is pending on a producer whose stream has
// since been deleted and created again (its commit will fail: the generation changed), and
// the chain's next append goes to a producer of the new stream. It must wait for the first to resolve, then fail with
// ErrPrecedingAppendFailed, and nothing of it may enter the stream: committing it while
// the first was pending let a session's later input commit after an earlier one failed.
func TestChainMovesToAnotherProducer(t *testing.T) {
	ctx := context.Background()
	mem, g, p1, c, t1 := chainPendingAtGate(t)

	// The stream is deleted and created again; p2 writes to the new one.
	if err := mem.Delete(ctx, "ingest/manifest"); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Open(mem, "ingest/manifest").Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	p2 := newProducer(t, testConfig(mem))
	defer closeProducer(t, p2)
	moved := make(chan struct{})
	testHookChainMove = func() { close(moved) }
	defer func() { testHookChainMove = nil }()
	type result struct {
		tk  *Ticket
		err error
	}
	second := make(chan result, 1)
	go func() {
		tk, err := p2.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("second")}, WithChain(c))
		second <- result{tk, err}
	}()
	var r result
	select {
	case <-moved: // waiting for first, as it should: let first's commit go on (and fail)
		close(g.gate)
		r = <-second
	case r = <-second: // handed over at once: let it commit, then first fail
		if r.err == nil {
			r.tk.Wait(ctx)
		}
		close(g.gate)
	}
	if _, err := t1.Result(); !errors.Is(err, manifest.ErrGenerationChanged) {
		t.Fatalf("first: %v, want ErrGenerationChanged (the stream was replaced)", err)
	}
	p1.Close(ctx) // fails: its stream is gone
	if r.err == nil {
		_, r.err = r.tk.Wait(ctx)
	}
	if !errors.Is(r.err, manifest.ErrPrecedingAppendFailed) {
		t.Errorf("second: %v, want ErrPrecedingAppendFailed", r.err)
	}
	snap, err := manifest.Open(mem, "ingest/manifest").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := snap.State.Tail.SeqNum; n != 0 {
		t.Errorf("the stream holds %d records after its chain's first append failed, want 0", n)
	}
}

// chainPendingAtGate creates the stream "ingest/manifest" on a memory store and hands a
// chain's first append ("first") to a producer whose batch uploads wait at g's gate, and
// returns once that upload has reached the gate.
func chainPendingAtGate(t *testing.T) (mem *objectstore.MemStore, g *gateStore, p1 *Producer, c *Chain, t1 *Ticket) {
	t.Helper()
	ctx := context.Background()
	mem = newStreamStore(t)
	g = &gateStore{Store: mem, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	p1 = newProducer(t, testConfig(g))
	c = new(Chain)
	t1, err := p1.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")}, WithChain(c))
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered // first's batch is being uploaded, and stays so until the gate opens
	return mem, g, p1, c, t1
}
