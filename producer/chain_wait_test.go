package producer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
)

// TestChainWaitCtxAndNoLock: while Append waits (WithChain) for the chain's last append on another producer, it holds
// no lock of the new producer (other appends go through), it returns when ctx ends, and it
// returns when the old producer is closed with an expired ctx (Close aborts and resolves the
// pending ticket), refusing the append then (the chain's append failed).
func TestChainWaitCtxAndNoLock(t *testing.T) {
	ctx := context.Background()
	mem, g, p1, c, _ := chainPendingAtGate(t)
	p2 := newProducer(t, testConfig(mem))
	defer closeProducer(t, p2)
	moved := make(chan struct{}, 2)
	testHookChainMove = func() { moved <- struct{}{} }
	defer func() { testHookChainMove = nil }()

	// 1. ctx ends during the wait; p2 serves other appends meanwhile.
	wctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() {
		_, err := p2.Append(wctx, batchfmt.AppendInput{Records: bodyRecs("second")}, WithChain(c))
		res <- err
	}()
	<-moved // waiting for first
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := p2.AppendSync(actx, batchfmt.AppendInput{Records: bodyRecs("other")}); err != nil {
		t.Fatalf("an unrelated append on p2 while the chain waits: %v", err)
	}
	acancel()
	select {
	case err := <-res:
		t.Fatalf("chained append returned before its predecessor resolved: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after ctx ended: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Append did not return after ctx ended")
	}

	// 2. The old producer is closed with an expired ctx: its pending ticket resolves, and
	// the waiting append is refused.
	go func() {
		_, err := p2.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("third")}, WithChain(c))
		res <- err
	}()
	<-moved // waiting for first
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Millisecond)
	_ = p1.Close(cctx)
	ccancel()
	select {
	case err := <-res:
		if !errors.Is(err, manifest.ErrPrecedingAppendFailed) {
			t.Fatalf("after the old producer aborted: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Append still waiting after the old producer closed")
	}
	close(g.gate)
}
