package producer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// An append that waited to be accepted (AppendChainedSince) has that much less time after
// its batch's flush, and fails before a batch flushed earlier that did not wait; it fails
// only from its batch on: the earlier batch is left to commit once the store is back, and
// the stream holds it and what came after the failure.
func TestAppendSinceFailsFromItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &refuseStore{Store: mem, kind: objectstore.ErrAccessDenied, n: 1 << 30}
		cfg := testConfig(s)
		cfg.FlushInterval = 0 // a batch per append
		cfg.DeliveryTimeout = 2 * time.Second
		p := newProducer(t, cfg)
		ctx := context.Background()

		early, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("early")})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		since := start.Add(-time.Second) // received half the delivery timeout ago
		late, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("late")}, nil, since)
		if err != nil {
			t.Fatal(err)
		}
		_, err = late.Result()
		if !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, objectstore.ErrAccessDenied) {
			t.Fatalf("append with half its delivery timeout left: %v, want ErrDeliveryTimeout wrapping the refusal", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("append failed after %v, want when its delivery timeout ran out, 1s", waited)
		}
		if !strings.Contains(err.Error(), "1s of its flush (1s of the delivery timeout 2s spent before an append of it was accepted)") {
			t.Errorf("error %q does not say how long the batch had", err)
		}
		select {
		case <-early.Done():
			_, err := early.Result()
			t.Fatalf("the earlier append, with another second to go, resolved with the later one's failure: %v", err)
		default:
		}

		s.mu.Lock()
		s.n = 0 // the store is back
		s.mu.Unlock()
		earlyAck, err := early.Result()
		if err != nil {
			t.Fatalf("earlier append once the store is back: %v", err)
		}
		after, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("after")})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		recs, _ := readStream(t, mem, "ingest/manifest")
		verify(t, recs, []ackedAppend{{bodies: []string{"early"}, ack: earlyAck}, {bodies: []string{"after"}, ack: after}},
			[][]string{{"late"}}, map[string]bool{"early": true, "after": true})
		if len(recs) != 2 {
			t.Fatalf("stream holds %d records, want 2", len(recs))
		}
	})
}

// An append not accepted within half its delivery timeout, counted from since (it waits
// for buffer space, or that time has passed already), is refused with ErrDeliveryTimeout
// and takes no space; with no DeliveryTimeout, since is ignored.
func TestAppendSinceBeforeAcceptance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &refuseStore{Store: mem, kind: objectstore.ErrAccessDenied, n: 1 << 30}
		cfg := testConfig(s)
		cfg.FlushInterval = 0
		cfg.MaxBufferedInputs = 1
		cfg.DeliveryTimeout = time.Hour
		p := newProducer(t, cfg)
		ctx := context.Background()

		if _, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("past")}, nil, time.Now().Add(-30*time.Minute-time.Millisecond)); !errors.Is(err, ErrDeliveryTimeout) {
			t.Fatalf("append received over half its delivery timeout ago: %v, want ErrDeliveryTimeout at once", err)
		}
		first, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("no-room")}, nil, start.Add(50*time.Millisecond-30*time.Minute))
		if !errors.Is(err, ErrDeliveryTimeout) || !strings.Contains(err.Error(), "no buffer space") {
			t.Fatalf("append waiting for room past its delivery timeout: %v, want ErrDeliveryTimeout naming the wait", err)
		}
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("refused after %v, want when half its delivery timeout ran out, 50ms", waited)
		}
		s.mu.Lock()
		s.n = 0
		s.mu.Unlock()
		firstAck, err := first.Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}

		cfg = testConfig(mem)
		cfg.FlushInterval = 0
		p = newProducer(t, cfg) // DeliveryTimeout 0
		tk, err := p.AppendChainedSince(ctx, batchfmt.AppendInput{Records: bodyRecs("no-bound")}, nil, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatalf("append received an hour ago, no DeliveryTimeout: %v, want since ignored", err)
		}
		noBound, err := tk.Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		recs, _ := readStream(t, mem, "ingest/manifest")
		verify(t, recs, []ackedAppend{{bodies: []string{"first"}, ack: firstAck}, {bodies: []string{"no-bound"}, ack: noBound}},
			[][]string{{"past"}, {"no-room"}}, map[string]bool{"first": true, "no-bound": true})
		if len(recs) != 2 {
			t.Fatalf("stream holds %d records, want 2", len(recs))
		}
	})
}
