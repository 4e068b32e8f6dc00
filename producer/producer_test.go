package producer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

var long = flag.Bool("sluice.long", false, "run the long seeded fault runs")

type workload struct {
	producers, writers, appends, maxRecords int
	seed                                    uint64
}

type outcome struct {
	mu       sync.Mutex
	acked    []ackedAppend
	rejected [][]string
	maybe    map[string]bool
	failed   int
}

// run drives w against store: producers × writers goroutines, each appending (or, for odd
// writers, submitting) records with unique bodies; some appends carry a match_seq_num that
// can never match, some the (empty) fencing token, some client timestamps.
func (w workload) run(t *testing.T, mkConfig func(i int) Config, closeTimeout time.Duration) *outcome {
	t.Helper()
	out := &outcome{maybe: map[string]bool{}}
	var wg sync.WaitGroup
	producers := make([]*Producer, w.producers)
	for i := range producers {
		producers[i] = newProducer(t, mkConfig(i))
	}
	for pi, p := range producers {
		for wi := range w.writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(w.seed, uint64(pi*1000+wi)))
				if wi%2 == 1 {
					w.submitter(t, p, pi, wi, rng, out)
				} else {
					w.appender(t, p, pi, wi, rng, out)
				}
			}()
		}
	}
	wg.Wait()
	for _, p := range producers {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		if err := p.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		cancel()
	}
	return out
}

func (w workload) appender(t *testing.T, p *Producer, pi, wi int, rng *rand.Rand, out *outcome) {
	type pendingAppend struct {
		bodies []string
		t      *Ticket
		reject bool
	}
	var pend []pendingAppend
	for a := range w.appends {
		n := 1 + rng.IntN(w.maxRecords)
		in := batchfmt.AppendInput{Records: make([]batchfmt.Record, n)}
		bodies := make([]string, n)
		for r := range in.Records {
			bodies[r] = fmt.Sprintf("p%d-w%d-a%d-r%d", pi, wi, a, r)
			in.Records[r].Body = []byte(bodies[r])
			if rng.IntN(3) == 0 {
				in.Records[r].Timestamp, in.Records[r].HasTimestamp = uint64(time.Now().UnixMilli())-uint64(rng.IntN(50)), true
			}
			if rng.IntN(4) == 0 {
				in.Records[r].Headers = []batchfmt.Header{{Name: []byte("h"), Value: []byte(strconv.Itoa(r))}}
			}
		}
		reject := false
		switch rng.IntN(10) {
		case 0:
			v := uint64(1) << 60
			in.MatchSeqNum, reject = &v, true
		case 1:
			tok := ""
			in.FencingToken = &tok
		}
		out.mu.Lock()
		for _, b := range bodies {
			out.maybe[b] = true
		}
		out.mu.Unlock()
		tk, err := p.Append(context.Background(), in)
		if err != nil {
			t.Errorf("append: %v", err)
			return
		}
		pend = append(pend, pendingAppend{bodies, tk, reject})
	}
	for _, pa := range pend {
		ack, err := pa.t.Result()
		out.mu.Lock()
		var mm *manifest.SeqNumMismatchError
		switch {
		case err == nil && !pa.reject:
			out.acked = append(out.acked, ackedAppend{bodies: pa.bodies, ack: ack})
		case err == nil && pa.reject:
			t.Errorf("append with an impossible match_seq_num was acked: %+v", ack)
		case errors.As(err, &mm) && pa.reject:
			out.rejected = append(out.rejected, pa.bodies)
		default:
			t.Errorf("append failed: %v", err)
			out.failed++
		}
		out.mu.Unlock()
	}
}

func (w workload) submitter(t *testing.T, p *Producer, pi, wi int, rng *rand.Rand, out *outcome) {
	type pendingRecord struct {
		body string
		t    *RecordTicket
	}
	var pend []pendingRecord
	for a := range w.appends {
		body := fmt.Sprintf("p%d-w%d-s%d", pi, wi, a)
		out.mu.Lock()
		out.maybe[body] = true
		out.mu.Unlock()
		rt, err := p.Submit(context.Background(), batchfmt.Record{Body: []byte(body)})
		if err != nil {
			t.Errorf("submit: %v", err)
			return
		}
		pend = append(pend, pendingRecord{body, rt})
		if rng.IntN(20) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	for _, pr := range pend {
		ack, err := pr.t.Wait(context.Background())
		out.mu.Lock()
		if err != nil {
			t.Errorf("submitted record failed: %v", err)
			out.failed++
		} else {
			if ack.SeqNum < ack.Batch.Start.SeqNum || ack.SeqNum >= ack.Batch.End.SeqNum {
				t.Errorf("record ack %d outside its batch %+v", ack.SeqNum, ack.Batch)
			}
			// Per-record acks carry no per-record timestamp: check the seq_num only.
			out.acked = append(out.acked, ackedAppend{bodies: []string{pr.body}, ack: Ack{
				Start: Position{SeqNum: ack.SeqNum, Timestamp: noTS}, End: Position{SeqNum: ack.SeqNum + 1, Timestamp: noTS}, Tail: ack.Batch.Tail}})
		}
		out.mu.Unlock()
	}
}

func TestManyProducersOneStream(t *testing.T) {
	storetest.ForEachBackend(t, func(t *testing.T, store objectstore.Store) {
		w := workload{producers: 4, writers: 3, appends: 40, maxRecords: 5, seed: seedFor(t)}
		out := w.run(t, func(i int) Config {
			c := testConfig(store)
			c.UploadConcurrency = 1 + i%3
			c.MaxGroupBatches = []int{1, 4, 256, 256}[i]
			if i == 2 {
				c.BatchCompression = batchfmt.CompressionZstd
			}
			return c
		}, 30*time.Second)
		recs, st := readStream(t, store, "ingest/manifest")
		verify(t, recs, out.acked, out.rejected, out.maybe)
		// The documented key shape, which the collector relies on.
		keyShape := regexp.MustCompile(`^ingest/[0-9a-f]{28}$`)
		for _, e := range st.Entries {
			if !keyShape.MatchString(e.Key) {
				t.Fatalf("batch key %q does not have the documented shape", e.Key)
			}
		}
		if out.failed > 0 || len(out.acked) == 0 || len(out.rejected) == 0 {
			t.Fatalf("%d failed, %d acked, %d rejected", out.failed, len(out.acked), len(out.rejected))
		}
		t.Logf("%d records in %d appends acked, %d rejected; tail %d; %d entries", len(recs), len(out.acked), len(out.rejected), st.Tail.SeqNum, len(st.Entries))
	})
}

// seedFor returns SLUICE_SEED if set, else a fresh seed; it logs it for replay.
func seedFor(t *testing.T) uint64 {
	t.Helper()
	return testseed.Get(t)
}

// TestFaults runs seeded workloads against a store that injects errors, latency and
// outcome-unknown results (applied, not applied, applied later) on uploads, segment and
// manifest writes, and manifest reads, then checks the invariants. A short run is in the
// suite; -sluice.long runs many more seeds, bigger. SLUICE_SEED=n replays one seed.
func TestFaults(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	size := workload{producers: 3, writers: 2, appends: 25, maxRecords: 4}
	if *long {
		seeds = nil
		for i := range 40 {
			seeds = append(seeds, uint64(1000+i))
		}
		size = workload{producers: 6, writers: 3, appends: 80, maxRecords: 8}
	}
	if v, ok := testseed.FromEnv(t); ok {
		seeds = []uint64{v}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay with %s=%d go test ./producer -run 'TestFaults'", testseed.Env, seed)
			mem := objectstore.NewMemStore()
			fs := newFaultStore(mem, seed, faultRates{failBefore: 0.08, unknownBefore: 0.06, unknownAfter: 0.06, unknownLater: 0.06,
				getFail: 0.05, latency: 0.2, maxLatency: time.Millisecond})
			w := size
			w.seed = seed
			out := w.run(t, func(i int) Config {
				c := testConfig(fs)
				c.MaxGroupBatches = []int{1, 256, 4}[i%3]
				c.FlushInterval = []time.Duration{FlushEveryAppend, FlushEveryAppend, time.Millisecond}[i%3]
				c.UploadConcurrency = 1 + i%4
				return c
			}, time.Minute)
			fs.quiesce()
			recs, _ := readStream(t, mem, "ingest/manifest")
			verify(t, recs, out.acked, out.rejected, out.maybe)
			if out.failed > 0 {
				t.Fatalf("%d appends failed", out.failed)
			}
			t.Logf("faults %s; %d records, %d acked appends, %d rejected", fs.summary(), len(recs), len(out.acked), len(out.rejected))
		})
	}
}

// TestFaultStoreRules runs the workload against faultstore.Store, whose decisions per
// (op, key, n-th call) depend only on the seed: errors before and after (outcome unknown,
// applied or not by the inner store) and delays on uploads and manifest writes, failed and
// truncated manifest reads.
func TestFaultStoreRules(t *testing.T) {
	seeds := []uint64{11, 12}
	if *long {
		seeds = []uint64{}
		for i := range 30 {
			seeds = append(seeds, uint64(2000+i))
		}
	}
	if v, ok := testseed.FromEnv(t); ok {
		seeds = []uint64{v}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay with %s=%d go test ./producer -run TestFaultStoreRules", testseed.Env, seed)
			mem := objectstore.NewMemStore()
			fs, err := faultstore.New(mem, seed,
				faultstore.Rule{Ops: []objectstore.Op{objectstore.OpPut}, Key: "ingest/manifest", ErrBefore: 0.1, ErrAfter: 0.15,
					DelayProb: 0.2, DelayJitter: time.Millisecond},
				faultstore.Rule{Ops: []objectstore.Op{objectstore.OpGet}, Key: "ingest/manifest", ErrBefore: 0.05, ErrAfter: 0.05, BodyErr: 0.05},
				faultstore.Rule{Ops: []objectstore.Op{objectstore.OpPut}, Key: "ingest/", ErrBefore: 0.05, ErrAfter: 0.1,
					DelayProb: 0.2, DelayJitter: time.Millisecond},
			)
			if err != nil {
				t.Fatal(err)
			}
			w := workload{producers: 3, writers: 2, appends: 25, maxRecords: 4, seed: seed}
			if *long {
				w = workload{producers: 6, writers: 3, appends: 60, maxRecords: 8, seed: seed}
			}
			out := w.run(t, func(i int) Config {
				c := testConfig(fs)
				c.MaxGroupBatches = []int{1, 256, 4}[i%3]
				c.FlushInterval = []time.Duration{FlushEveryAppend, FlushEveryAppend, time.Millisecond}[i%3]
				return c
			}, time.Minute)
			fs.SetEnabled(false)
			recs, _ := readStream(t, mem, "ingest/manifest")
			verify(t, recs, out.acked, out.rejected, out.maybe)
			if out.failed > 0 {
				t.Fatalf("%d appends failed", out.failed)
			}
			tot := fs.Total()
			if tot.Injected() == 0 {
				t.Fatalf("no fault injected")
			}
			t.Logf("faults %+v; %d records, %d acked appends", tot, len(recs), len(out.acked))
		})
	}
}

// Enough entries that the manifest seals segments while producers race: reading back spans
// segments and recent entries, and every ack still matches.
func TestSealingUnderConcurrentProducers(t *testing.T) {
	store := objectstore.NewMemStore()
	w := workload{producers: 4, writers: 2, appends: 160, maxRecords: 2, seed: seedFor(t)}
	// The appenders alone make 4 × 160 = 640 batch objects (FlushEveryAppend): more than
	// MaxRecentEntries.
	out := w.run(t, func(i int) Config {
		c := testConfig(store)
		c.FlushInterval = FlushEveryAppend
		c.MaxGroupBatches = 8
		return c
	}, 30*time.Second)
	recs, st := readStream(t, store, "ingest/manifest")
	verify(t, recs, out.acked, out.rejected, out.maybe)
	if len(st.Segments) == 0 || len(st.Entries) > manifest.MaxRecentEntries {
		t.Fatalf("%d segment refs, %d entries: sealing did not happen", len(st.Segments), len(st.Entries))
	}
	t.Logf("%d records, %d segment refs, %d recent entries", len(recs), len(st.Segments), len(st.Entries))
}
