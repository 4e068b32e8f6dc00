package producer

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
)

// TestChainRefusalDoesNotFailEarlierPending: an append that Append refuses at
// once (here: invalid, an append without records) must fail only what comes after it in the
// chain. Appends handed over before it, still waiting for their commit, precede the failure
// and must commit.
func TestChainRefusalDoesNotFailEarlierPending(t *testing.T) {
	ctx := context.Background()
	store := newStreamStore(t)
	cfg := testConfig(store)
	cfg.FlushInterval = time.Hour // the first append is still pending when the second is refused
	p := newProducer(t, cfg)
	defer closeProducer(t, p)
	var c Chain
	t1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")}, WithChain(&c))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(ctx, batchfmt.AppendInput{}, WithChain(&c)); err == nil {
		t.Fatal("an empty append was accepted")
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := t1.Result(); err != nil {
		t.Fatalf("the append handed over before the refused one failed: %v", err)
	}
}

// TestChainCtxRefusalDoesNotFailEarlierPending: the same with the refusal that an
// append session meets when its context ends while it waits for buffer space (client
// disconnect, server shutdown): the inputs of the session already handed over commit.
func TestChainCtxRefusalDoesNotFailEarlierPending(t *testing.T) {
	ctx := context.Background()
	store := newStreamStore(t)
	cfg := testConfig(store)
	cfg.FlushInterval = time.Hour
	cfg.MaxBufferedInputs = 1
	p := newProducer(t, cfg)
	defer closeProducer(t, p)
	var c Chain
	t1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")}, WithChain(&c))
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	// Full (one buffered input): waits for room, and ctx has ended.
	if _, err := p.Append(cctx, batchfmt.AppendInput{Records: bodyRecs("second")}, WithChain(&c)); err == nil {
		t.Fatal("accepted with a cancelled ctx while full")
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := t1.Result(); err != nil {
		t.Fatalf("the append handed over before the refused one failed: %v", err)
	}
}
