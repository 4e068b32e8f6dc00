package journal

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
)

func window(t testing.TB, rng *rand.Rand, id ID, n uint64) (Header, []byte) {
	t.Helper()
	h, secs := randomWindow(rng, n)
	h.Journal = id
	obj, err := Encode(h, secs)
	if err != nil {
		t.Fatal(err)
	}
	return h, obj
}

// lossy fails a third of the journal's writes and reads, half of them after the store
// took them (the writer then sees ErrOutcomeUnknown).
func lossy(t testing.TB, inner objectstore.Store, seed uint64) *faultstore.Store {
	t.Helper()
	fs, err := faultstore.New(inner, seed,
		faultstore.Rule{Ops: []objectstore.Op{objectstore.OpPut}, Key: Root, ErrBefore: 0.15, ErrAfter: 0.2},
		faultstore.Rule{Ops: []objectstore.Op{objectstore.OpGet}, Key: Root, ErrBefore: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// retry calls f until it returns something other than an injected fault.
func retry(f func() error) error {
	for {
		err := f()
		if err == nil || !errors.Is(err, faultstore.ErrInjected) {
			return err
		}
	}
}

func TestWriteSettlesUnknownOutcomes(t *testing.T) {
	seed := testseed.Get(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	s := lossy(t, mem, seed)
	id := ID(rng.Uint64())
	nonces := map[uint64][16]byte{}
	for n := range uint64(100) {
		h, obj := window(t, rng, id, n)
		if err := retry(func() error { return Write(ctx, s, h, obj) }); err != nil {
			t.Fatalf("window %d: %v", n, err)
		}
		nonces[n] = h.Nonce
	}
	if s.Total().After == 0 {
		t.Fatal("no write had an unknown outcome: the test proves nothing")
	}
	end, fenced, err := Walk(ctx, mem, id, 0, func(h Header, _ []IndexRow) error {
		if h.Nonce != nonces[h.Number] {
			t.Errorf("window %d holds another nonce", h.Number)
		}
		return nil
	})
	if err != nil || end != 100 || fenced {
		t.Fatalf("Walk = %d, %v, %v; want 100 windows, no fence", end, fenced, err)
	}
}

func TestWalkStopsAtTheFirstGapOrFence(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 4))
	ctx := context.Background()
	s := objectstore.NewMemStore()
	id := ID(7)
	for _, n := range []uint64{0, 1, 3} { // 2 is in flight
		h, obj := window(t, rng, id, n)
		if err := Write(ctx, s, h, obj); err != nil {
			t.Fatal(err)
		}
	}
	var seen []uint64
	end, fenced, err := Walk(ctx, s, id, 0, func(h Header, _ []IndexRow) error { seen = append(seen, h.Number); return nil })
	if err != nil || end != 2 || fenced || len(seen) != 2 {
		t.Fatalf("Walk = %d, %v, %v, saw %v; want end 2 after 0 and 1", end, fenced, err, seen)
	}
	at, err := Fence(ctx, s, id, 1, Header{}, nil)
	if err != nil || at != 2 {
		t.Fatalf("Fence = %d, %v; want the gap at 2", at, err)
	}
	// The window in flight at 2 can no longer land, and 3 is never part of the history.
	h, obj := window(t, rng, id, 2)
	if err := Write(ctx, s, h, obj); !errors.Is(err, ErrFenced) {
		t.Fatalf("write of window 2 after the fence: %v, want ErrFenced", err)
	}
	end, fenced, err = Walk(ctx, s, id, 0, nil)
	if err != nil || end != 2 || !fenced {
		t.Fatalf("Walk after the fence = %d, %v, %v; want a fence at 2", end, fenced, err)
	}
}

// A writer appends windows while fencers close the journal. Whatever the interleaving and
// the lost answers: every window the writer was told is durable lies before the fence, every
// number before the fence is one of its windows, every fencer names the same number, and the
// writer's first refused window is the fence's number.
func TestFenceRacesAWriter(t *testing.T) {
	seed := testseed.Get(t)
	for round := range 40 {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		ctx := context.Background()
		mem := objectstore.NewMemStore()
		s := lossy(t, mem, seed+uint64(round))
		id := ID(rng.Uint64())
		objs := make([][]byte, 200)
		hdrs := make([]Header, 200)
		for n := range objs {
			hdrs[n], objs[n] = window(t, rng, id, uint64(n))
		}
		var acked []uint64
		var writerErr error
		var refusedAt uint64
		fenceAt := make([]uint64, 3)
		fenceErr := make([]error, 3)
		delays := []time.Duration{time.Duration(rng.IntN(300)) * time.Microsecond, time.Duration(rng.IntN(300)) * time.Microsecond, time.Duration(rng.IntN(300)) * time.Microsecond}
		var wg sync.WaitGroup
		wg.Go(func() {
			for n := range uint64(len(objs)) {
				if err := retry(func() error { return Write(ctx, s, hdrs[n], objs[n]) }); err != nil {
					writerErr, refusedAt = err, n
					return
				}
				acked = append(acked, n)
			}
		})
		for i := range fenceAt {
			wg.Go(func() {
				time.Sleep(delays[i])
				var from uint64 // a fencer resumes its walk where a failed read stopped it
				next := func(h Header, _ []IndexRow) error {
					if h.Number != from {
						t.Errorf("round %d: fencer %d walked to %d, expected %d", round, i, h.Number, from)
					}
					from = h.Number + 1
					return nil
				}
				fenceErr[i] = retry(func() error {
					var err error
					fenceAt[i], err = Fence(ctx, s, id, from, Header{Nonce: [16]byte{byte(i + 1)}}, next)
					return err
				})
			})
		}
		wg.Wait()
		for i := range fenceAt {
			if fenceErr[i] != nil {
				t.Fatalf("round %d: fencer %d: %v", round, i, fenceErr[i])
			}
			if fenceAt[i] != fenceAt[0] {
				t.Fatalf("round %d: fencers disagree: %v", round, fenceAt)
			}
		}
		f := fenceAt[0]
		if f == uint64(len(objs)) {
			continue // the writer finished first; the fence follows its last window
		}
		if !errors.Is(writerErr, ErrFenced) || refusedAt != f {
			t.Fatalf("round %d: writer stopped at %d with %v; want ErrFenced at %d", round, refusedAt, writerErr, f)
		}
		if uint64(len(acked)) != f {
			t.Fatalf("round %d: %d windows acknowledged, the fence is at %d", round, len(acked), f)
		}
		end, fenced, err := Walk(ctx, mem, id, 0, func(h Header, _ []IndexRow) error {
			if h.Nonce != hdrs[h.Number].Nonce {
				t.Errorf("round %d: window %d is not the writer's", round, h.Number)
			}
			return nil
		})
		if err != nil || end != f || !fenced {
			t.Fatalf("round %d: Walk = %d, %v, %v; want a fence at %d", round, end, fenced, err, f)
		}
	}
}
