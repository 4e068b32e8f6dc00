package producer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
)

// TestChainStopsAtFirstFailure: appends of one Chain commit in order, each only if none
// before it failed, whether the later ones share the failed one's commit or come in later
// commits; an unchained append beside them is unaffected, and a chained append handed over
// after the failure is refused at once. Nothing of a failed chain's later appends is read.
func TestChainStopsAtFirstFailure(t *testing.T) {
	ctx := context.Background()
	store := newStreamStore(t)
	for _, sameCommit := range []bool{true, false} {
		cfg := testConfig(store)
		if sameCommit {
			cfg.FlushInterval = time.Hour // everything below goes into one batch at Flush
		}
		p := newProducer(t, cfg)
		tail := func() uint64 {
			snap, err := manifest.Open(store, "ingest/manifest").Load(ctx)
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
		t1, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("first")}, WithChain(&c))
		if err != nil {
			t.Fatal(err)
		}
		wait(t1)
		// A failing condition: the stream's tail is not 1000.
		t2, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("stale"), MatchSeqNum: u64(1000)}, WithChain(&c))
		if err != nil {
			t.Fatal(err)
		}
		wait(t2)
		// Would commit on its own (its match_seq_num is right if "stale" is skipped).
		var t3 *Ticket
		if sameCommit {
			t3, err = p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("after"), MatchSeqNum: u64(start + 1)}, WithChain(&c))
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
		if _, err := p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs("late")}, WithChain(&c)); !errors.Is(err, manifest.ErrPrecedingAppendFailed) {
			t.Fatalf("after the failure: %v, want ErrPrecedingAppendFailed at once", err)
		}
		if got := tail(); got != start+2 {
			t.Fatalf("sameCommit=%v: tail %d, want %d (first and unchained only)", sameCommit, got, start+2)
		}
		closeProducer(t, p)
	}
}

// TestChainsUnderFaults: several chains appended at once, each from its own goroutine, on a
// store that injects errors, latency and outcome-unknown results, with an append carrying a
// wrong fencing token now and then. For every chain: once one of its appends fails, every
// later one fails too and none of their records is in the stream; the acked ones are in
// the stream where their acks say (verify). SLUICE_SEED=n replays one seed.
func TestChainsUnderFaults(t *testing.T) {
	seeds := []uint64{21, 22, 23}
	if v, ok := testseed.FromEnv(t); ok {
		seeds = []uint64{v}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay with %s=%d go test ./producer -run TestChainsUnderFaults", testseed.Env, seed)
			ctx := context.Background()
			mem := newStreamStore(t)
			fs := newFaultStore(mem, seed, faultRates{failBefore: 0.08, unknownBefore: 0.06, unknownAfter: 0.06, unknownLater: 0.06,
				getFail: 0.05, latency: 0.2, maxLatency: time.Millisecond})
			cfg := testConfig(fs)
			cfg.MaxGroupBatches = 4
			p := newProducer(t, cfg)
			const chains, perChain = 4, 40
			type handed struct {
				bodies []string
				t      *Ticket
			}
			out := make([][]handed, chains)
			var wg sync.WaitGroup
			for c := range chains {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(seed, uint64(c)))
					var ch Chain
					for i := range perChain {
						n := 1 + r.IntN(2)
						var in batchfmt.AppendInput
						var bodies []string
						for k := range n {
							b := fmt.Sprintf("c%d-a%d-r%d", c, i, k)
							bodies = append(bodies, b)
							in.Records = append(in.Records, batchfmt.Record{Body: []byte(b)})
						}
						if r.IntN(30) == 0 {
							in.FencingToken = str("wrong") // the stream's token is empty
						}
						tk, err := p.Append(ctx, in, WithChain(&ch))
						if err != nil {
							return // a session hands over nothing after a refusal
						}
						out[c] = append(out[c], handed{bodies, tk})
						if r.IntN(8) == 0 {
							time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
						}
					}
				}()
			}
			wg.Wait()
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := p.Close(cctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			fs.quiesce()
			var acked []ackedAppend
			var rejected [][]string
			maybe := map[string]bool{}
			failedChains := 0
			for c, hs := range out {
				failedAt := -1
				for i, h := range hs {
					for _, b := range h.bodies {
						maybe[b] = true
					}
					ack, err := h.t.Result()
					switch {
					case err == nil:
						if failedAt >= 0 {
							t.Fatalf("chain %d: append %d acked after append %d failed", c, i, failedAt)
						}
						acked = append(acked, ackedAppend{bodies: h.bodies, ack: ack})
					case errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrAborted):
						t.Fatalf("chain %d: append %d: %v (Close had a minute)", c, i, err)
					default:
						if failedAt < 0 {
							failedAt = i
							failedChains++
						} else if !errors.Is(err, manifest.ErrPrecedingAppendFailed) {
							t.Fatalf("chain %d: append %d after the failure of %d: %v, want ErrPrecedingAppendFailed", c, i, failedAt, err)
						}
						rejected = append(rejected, h.bodies)
					}
				}
			}
			recs, _ := readStream(t, mem, "ingest/manifest")
			verify(t, recs, acked, rejected, maybe)
			t.Logf("faults %s; %d records, %d acked appends, %d rejected, %d of %d chains failed", fs.summary(), len(recs), len(acked), len(rejected), failedChains, chains)
		})
	}
}
