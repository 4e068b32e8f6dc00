package producer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// readRec is a record as a reader sees it (package streamcheck).
type readRec = streamcheck.Record

// readStream reads the stream with the tests' own reader, independent of package consumer
// (streamcheck.Read), failing the test on any inconsistency.
func readStream(t testing.TB, store objectstore.Store, path string) ([]readRec, *manifest.State) {
	t.Helper()
	recs, st, _, err := streamcheck.Read(context.Background(), store, path)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	return recs, st
}

// ackedAppend is what a writer in a test remembers about one append.
type ackedAppend struct {
	bodies []string
	ack    Ack
}

// verify checks the invariants: seq_nums contiguous from 0, timestamps non-decreasing,
// every acked record present exactly once at the position its ack names, nothing present
// that was not appended, and rejected appends absent.
func verify(t testing.TB, recs []readRec, acked []ackedAppend, rejected [][]string, maybe map[string]bool) {
	t.Helper()
	where := make(map[string]int, len(recs))
	var lastTS uint64
	for i, r := range recs {
		if r.Seq != uint64(i) {
			t.Fatalf("record %d has seq_num %d", i, r.Seq)
		}
		if r.TS < lastTS {
			t.Fatalf("timestamp went back at seq %d: %d < %d", r.Seq, r.TS, lastTS)
		}
		lastTS = r.TS
		if r.Command != "" {
			continue
		}
		if j, dup := where[r.Body]; dup {
			t.Fatalf("record %q appears twice, at %d and %d", r.Body, j, i)
		}
		where[r.Body] = i
	}
	ackedAt := make(map[string]bool)
	for _, a := range acked {
		if a.ack.End.SeqNum-a.ack.Start.SeqNum != uint64(len(a.bodies)) || a.ack.Tail.SeqNum < a.ack.End.SeqNum {
			t.Fatalf("ack %+v for %d records", a.ack, len(a.bodies))
		}
		for k, body := range a.bodies {
			i, ok := where[body]
			if !ok {
				t.Fatalf("acked record %q is missing (ack %+v)", body, a.ack)
			}
			if uint64(i) != a.ack.Start.SeqNum+uint64(k) {
				t.Fatalf("acked record %q is at %d, its ack says %d", body, i, a.ack.Start.SeqNum+uint64(k))
			}
			if k == 0 && a.ack.Start.Timestamp != noTS && recs[i].TS != a.ack.Start.Timestamp {
				t.Fatalf("record %q: timestamp %d, ack start says %d", body, recs[i].TS, a.ack.Start.Timestamp)
			}
			if k == len(a.bodies)-1 && a.ack.End.Timestamp != noTS && recs[i].TS != a.ack.End.Timestamp {
				t.Fatalf("record %q: timestamp %d, ack end says %d", body, recs[i].TS, a.ack.End.Timestamp)
			}
			if ackedAt[body] {
				t.Fatalf("acked record %q is claimed by two acks (second: %+v)", body, a.ack)
			}
			ackedAt[body] = true
		}
	}
	for _, bodies := range rejected {
		for _, body := range bodies {
			if _, ok := where[body]; ok {
				t.Fatalf("record %q of a rejected append is visible", body)
			}
		}
	}
	for body := range where {
		if !maybe[body] {
			t.Fatalf("record %q is in the stream but was never appended", body)
		}
	}
}

// faultStore injects faults into Put and Get, from a seeded generator:
//   - failBefore: a plain error, nothing written;
//   - unknownBefore: ErrOutcomeUnknown, nothing written;
//   - unknownAfter: ErrOutcomeUnknown, written;
//   - unknownLater: ErrOutcomeUnknown at once, written a little later (a slow request);
//   - latency: a random delay before the call.
type faultStore struct {
	objectstore.Store
	mu   sync.Mutex
	rng  *rand.Rand
	p    faultRates
	wg   sync.WaitGroup
	hits map[string]int
	off  bool
}

type faultRates struct {
	failBefore, unknownBefore, unknownAfter, unknownLater, getFail, latency float64
	maxLatency                                                              time.Duration
}

func newFaultStore(inner objectstore.Store, seed uint64, p faultRates) *faultStore {
	return &faultStore{Store: inner, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), p: p, hits: map[string]int{}}
}

var errInjected = errors.New("injected fault")

func (f *faultStore) roll() (kind string, delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off {
		return "", 0
	}
	if f.rng.Float64() < f.p.latency && f.p.maxLatency > 0 {
		delay = time.Duration(f.rng.Int64N(int64(f.p.maxLatency)))
	}
	x := f.rng.Float64()
	for _, k := range []struct {
		name string
		p    float64
	}{{"failBefore", f.p.failBefore}, {"unknownBefore", f.p.unknownBefore}, {"unknownAfter", f.p.unknownAfter}, {"unknownLater", f.p.unknownLater}} {
		if x < k.p {
			f.hits[k.name]++
			return k.name, delay
		}
		x -= k.p
	}
	return "", delay
}

// quiesce stops injecting faults and waits for delayed writes.
func (f *faultStore) quiesce() {
	f.mu.Lock()
	f.off = true
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *faultStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	kind, delay := f.roll()
	if delay > 0 {
		time.Sleep(delay)
	}
	unknown := objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, errInjected)
	switch kind {
	case "failBefore":
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, errInjected)
	case "unknownBefore":
		return objectstore.ObjectInfo{}, unknown
	case "unknownAfter":
		if _, err := f.Store.Put(ctx, key, body, size, cond); err != nil {
			return objectstore.ObjectInfo{}, err
		}
		return objectstore.ObjectInfo{}, unknown
	case "unknownLater":
		data, err := io.ReadAll(body)
		if err != nil {
			return objectstore.ObjectInfo{}, err
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			time.Sleep(time.Millisecond)
			_, _ = objectstore.PutBytes(context.Background(), f.Store, key, data, cond)
		}()
		return objectstore.ObjectInfo{}, unknown
	}
	return f.Store.Put(ctx, key, body, size, cond)
}

func (f *faultStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	f.mu.Lock()
	fail := !f.off && f.rng.Float64() < f.p.getFail
	if fail {
		f.hits["getFail"]++
	}
	f.mu.Unlock()
	if fail {
		return nil, objectstore.NewOpError("get", key, nil, errInjected)
	}
	return f.Store.Get(ctx, key, opts)
}

func (f *faultStore) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprint(f.hits)
}

// testConfig is a fast config on store.
// newStreamStore returns a memory store holding a new stream at "ingest/manifest".
func newStreamStore(t testing.TB) *objectstore.MemStore {
	t.Helper()
	mem := objectstore.NewMemStore()
	if _, err := manifest.Open(mem, "ingest/manifest").Create(context.Background(), manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return mem
}

func testConfig(store objectstore.Store) Config {
	c := DefaultConfig()
	c.ObjectStore = store
	c.FlushInterval = 2 * time.Millisecond
	c.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c.Batching.Linger = time.Millisecond
	return c
}

func newProducer(t testing.TB, cfg Config) *Producer {
	t.Helper()
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	return p
}

// noTS marks an ack position whose timestamp the test does not know.
const noTS = ^uint64(0)
