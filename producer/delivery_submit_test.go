package producer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// A record Submit accepted after append A1, whose client-side batch the linger loop hands to
// append while the buffer is full, waits in append for buffer space, which the expiry that
// fails A1 (and A2) frees; it fails too, rather than commit after an append accepted before
// it failed.
func TestDeliveryTimeoutSubmitWaitingForRoom(t *testing.T) {
	s := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrAccessDenied, n: 1 << 30}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.MaxBufferedInputs = 2
	cfg.Batching.Linger = 10 * time.Millisecond
	cfg.DeliveryTimeout = 300 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	a1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("A1")})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := p.Submit(ctx, batchfmt.Record{Body: []byte("r1, submitted after A1")})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("A2")}) // fills the buffer
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the linger loop is now blocked in acquire, holding r1
	waitFailed(t, a1, "A1")
	waitFailed(t, a2, "A2")
	s.heal() // the store heals
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ra, err := r1.Wait(wctx)
	closeProducer(t, p)
	if err == nil {
		recs, _ := readStream(t, s.Store, "ingest/manifest")
		t.Fatalf("r1, submitted after A1, committed at seq_num %d (stream %+v) after A1 failed with ErrDeliveryTimeout", ra.SeqNum, recs)
	}
	if !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("r1: %v, want ErrDeliveryTimeout", err)
	}
}

// A Submit held back by a full buffer until the expiry of A1 frees it is accepted after A1
// failed, so it commits once the store heals.
func TestDeliveryTimeoutSubmitAcceptedAfterExpiry(t *testing.T) {
	s := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrAccessDenied, n: 1 << 30}
	cfg := testConfig(s)
	cfg.FlushInterval = FlushEveryAppend
	cfg.MaxBufferedInputs = 1
	cfg.Batching.Linger = time.Hour
	cfg.DeliveryTimeout = 100 * time.Millisecond
	p := newProducer(t, cfg)
	ctx := context.Background()

	a1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("A1")})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := p.Submit(ctx, batchfmt.Record{Body: []byte("r1")}) // blocks until A1 expires
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-a1.Done():
	default:
		t.Fatal("Submit returned before A1 failed: the test did not block it")
	}
	s.heal()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Wait(ctx); err != nil {
		t.Errorf("r1, whose Submit returned after A1 failed, with the store healed: %v", err)
	}
	closeProducer(t, p)
}
