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
	"github.com/sluice-dev/sluice/objectstore"
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
