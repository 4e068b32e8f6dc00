package producer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// Close(ctx) aborts when ctx ends, even while the submitter's linger loop holds the
// submitter's lock waiting for buffer space that a stuck store never frees: Close cancels the
// producer's context, which ends that wait. It once blocked on that lock, whatever its ctx.
// (Real time, not synctest: a goroutine waiting for a mutex does not let fake time advance.)
func TestCloseHonoursContextWithSubmitBlocked(t *testing.T) {
	g := &gateStore{Store: objectstore.NewMemStore(), gate: make(chan struct{})}
	cfg := testConfig(g)
	cfg.MaxBufferedInputs = 1
	cfg.Batching.Linger = 200 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	// A record waits in the client-side batch for its linger, while an append takes the one
	// buffer slot; its upload is stuck.
	if _, err := p.Submit(ctx, batchfmt.Record{Body: []byte("submitted")}); err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer acancel()
	tk, err := p.Append(actx, batchfmt.AppendInput{Records: bodyRecs("appended")})
	if err != nil {
		t.Skipf("the linger passed before the append took the slot: %v", err)
	}
	// The linger passes: the loop appends the batch and waits for space, holding the lock.
	deadline := time.Now().Add(5 * time.Second)
	for p.sub.mu.TryLock() {
		p.sub.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the submitter's loop never blocked")
		}
		time.Sleep(5 * time.Millisecond)
	}

	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Close(cctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v, want its ctx's error", err)
		}
		if _, err := tk.Result(); !errors.Is(err, ErrAborted) {
			t.Fatalf("ticket: %v, want ErrAborted", err)
		}
	case <-time.After(10 * time.Second):
		close(g.gate) // let the producer drain so that its goroutines end
		<-done
		t.Fatal("Close(ctx) did not return 10 s after its ctx (50 ms) ended")
	}
}
