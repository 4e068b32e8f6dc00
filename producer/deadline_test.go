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

// An append's own deadline (AppendChainedBy) fails its batch before DeliveryTimeout would,
// and only from that batch on: an earlier batch, whose deadline is later, is left to commit
// once the store is back, and the stream holds it and what came after the failure.
func TestAppendDeadlineFailsFromItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &refuseStore{Store: mem, kind: objectstore.ErrAccessDenied, n: 1 << 30}
		cfg := testConfig(s)
		cfg.FlushInterval = 0 // a batch per append
		cfg.DeliveryTimeout = time.Hour
		p := newProducer(t, cfg)
		ctx := context.Background()

		early, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("early")})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		late, err := p.AppendChainedBy(ctx, batchfmt.AppendInput{Records: bodyRecs("late")}, nil, start.Add(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		_, err = late.Result()
		if !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, objectstore.ErrAccessDenied) {
			t.Fatalf("append with a 100ms deadline: %v, want ErrDeliveryTimeout wrapping the refusal", err)
		}
		if waited := time.Since(start); waited != 100*time.Millisecond {
			t.Errorf("append failed after %v, want at its deadline, 100ms", waited)
		}
		select {
		case <-early.Done():
			_, err := early.Result()
			t.Fatalf("the earlier append, whose deadline is an hour away, resolved with the later one's failure: %v", err)
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

// An append whose deadline passes before it is accepted (waiting for buffer space, or
// already past) is refused with ErrDeliveryTimeout and takes no space; with no
// DeliveryTimeout a deadline is ignored.
func TestAppendDeadlineBeforeAcceptance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newStreamStore(t)
		s := &refuseStore{Store: mem, kind: objectstore.ErrAccessDenied, n: 1 << 30}
		cfg := testConfig(s)
		cfg.FlushInterval = 0
		cfg.MaxBufferedInputs = 1
		cfg.DeliveryTimeout = time.Hour
		p := newProducer(t, cfg)
		ctx := context.Background()

		if _, err := p.AppendChainedBy(ctx, batchfmt.AppendInput{Records: bodyRecs("past")}, nil, time.Now().Add(-time.Millisecond)); !errors.Is(err, ErrDeliveryTimeout) {
			t.Fatalf("append whose deadline has passed: %v, want ErrDeliveryTimeout at once", err)
		}
		first, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = p.AppendChainedBy(ctx, batchfmt.AppendInput{Records: bodyRecs("no-room")}, nil, start.Add(50*time.Millisecond))
		if !errors.Is(err, ErrDeliveryTimeout) || !strings.Contains(err.Error(), "no buffer space") {
			t.Fatalf("append waiting for room past its deadline: %v, want ErrDeliveryTimeout naming the wait", err)
		}
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("refused after %v, want at its deadline, 50ms", waited)
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
		tk, err := p.AppendChainedBy(ctx, batchfmt.AppendInput{Records: bodyRecs("no-bound")}, nil, time.Now().Add(-time.Millisecond))
		if err != nil {
			t.Fatalf("append with a past deadline and no DeliveryTimeout: %v, want the deadline ignored", err)
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
