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

// TestChainStopsAtFirstFailure: appends of one Chain commit in order, each only if none
// before it failed, whether the later ones share the failed one's commit or come in later
// commits; an unchained append beside them is unaffected, and a chained append handed over
// after the failure is refused at once. Nothing of a failed chain's later appends is read.
func TestChainStopsAtFirstFailure(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	if _, err := manifest.Create(ctx, store, "ingest/manifest", manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, sameCommit := range []bool{true, false} {
		cfg := testConfig(store)
		if sameCommit {
			cfg.FlushInterval = time.Hour // everything below goes into one batch at Flush
		}
		p := newProducer(t, cfg)
		tail := func() uint64 {
			snap, err := manifest.Load(ctx, store, "ingest/manifest")
			if err != nil {
				t.Fatal(err)
			}
			return snap.State.Tail.SeqNum
		}
		start := tail()
		var c Chain
		wait := func(tk *Ticket) (Ack, error) {
			if !sameCommit {
				return tk.Wait(ctx)
			}
			return Ack{}, nil
		}
		t1, err := p.AppendChained(ctx, batchfmt.AppendInput{Records: bodyRecs("first")}, &c)
		if err != nil {
			t.Fatal(err)
		}
		wait(t1)
		// A failing condition: the stream's tail is not 1000.
		t2, err := p.AppendChained(ctx, batchfmt.AppendInput{Records: bodyRecs("stale"), MatchSeqNum: u64(1000)}, &c)
		if err != nil {
			t.Fatal(err)
		}
		wait(t2)
		// Would commit on its own (its match_seq_num is right if "stale" is skipped).
		var t3 *Ticket
		if sameCommit {
			t3, err = p.AppendChained(ctx, batchfmt.AppendInput{Records: bodyRecs("after"), MatchSeqNum: u64(start + 1)}, &c)
			if err != nil {
				t.Fatal(err)
			}
		}
		other, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("unchained")})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := t1.Result(); err != nil {
			t.Fatalf("first: %v", err)
		}
		var mm *manifest.SeqNumMismatchError
		if _, err := t2.Result(); !errors.As(err, &mm) {
			t.Fatalf("stale: %v, want a seq_num mismatch", err)
		}
		if t3 != nil {
			if _, err := t3.Result(); !errors.Is(err, manifest.ErrPrecedingAppendFailed) {
				t.Fatalf("same commit: after the failure: %v, want ErrPrecedingAppendFailed", err)
			}
		}
		if _, err := other.Result(); err != nil {
			t.Fatalf("unchained append beside the chain: %v", err)
		}
		if !c.Failed() {
			t.Fatal("chain not marked failed")
		}
		if _, err := p.AppendChained(ctx, batchfmt.AppendInput{Records: bodyRecs("late")}, &c); !errors.Is(err, manifest.ErrPrecedingAppendFailed) {
			t.Fatalf("after the failure: %v, want ErrPrecedingAppendFailed at once", err)
		}
		if got := tail(); got != start+2 {
			t.Fatalf("sameCommit=%v: tail %d, want %d (first and unchained only)", sameCommit, got, start+2)
		}
		closeProducer(t, p)
	}
}
