package manifest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
)

func propertySeed(t *testing.T) uint64 {
	return testseed.Get(t)
}

// Random batches with random conditions, commands and timestamps, under every timestamping
// mode: seq_nums stay contiguous, timestamps non-decreasing, the trim point monotone and
// behind the tail, every result rebuilds from its entry, and the state round-trips.
func TestApplyProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(propertySeed(t), 7))
	for _, mode := range []TimestampingMode{ClientPrefer, ClientRequire, Arrival} {
		for _, uncapped := range []bool{false, true} {
			cfg := DefaultConfig()
			cfg.Timestamping = Timestamping{Mode: mode, Uncapped: uncapped}
			s := newState(t, cfg)
			var lastTS, lastTrim uint64
			nums := map[string]uint64{}
			for range 300 {
				pid := fmt.Sprintf("p%d", rng.IntN(3))
				nums[pid]++
				arrival := uint64(1000 + rng.IntN(1000))
				var appends []*batchfmt.AppendInput
				for range 1 + rng.IntN(4) {
					in := &batchfmt.AppendInput{}
					for range 1 + rng.IntN(4) {
						var r batchfmt.Record
						switch rng.IntN(12) {
						case 0:
							r = batchfmt.FenceRecord(fmt.Sprintf("t%d", rng.IntN(2)))
						case 1:
							r = batchfmt.TrimRecord(uint64(rng.IntN(int(s.Tail.SeqNum + 20))))
						default:
							r.Body = []byte("x")
						}
						if rng.IntN(2) == 0 {
							r.Timestamp, r.HasTimestamp = uint64(rng.IntN(2500)), true
						}
						in.Records = append(in.Records, r)
					}
					if rng.IntN(4) == 0 {
						v := s.Tail.SeqNum + uint64(rng.IntN(3))
						in.MatchSeqNum = &v
					}
					if rng.IntN(4) == 0 {
						v := fmt.Sprintf("t%d", rng.IntN(2))
						if rng.IntN(3) == 0 {
							v = ""
						}
						in.FencingToken = &v
					}
					appends = append(appends, in)
				}
				before := s.Tail
				res, err := s.Apply(batch(pid, nums[pid], arrival, appends...))
				if err != nil {
					t.Fatal(err)
				}
				e := s.Entries[len(s.Entries)-1]
				if e.FirstSeq != before.SeqNum || s.Tail.SeqNum != e.EndSeq() || e.Floor != before.Timestamp {
					t.Fatalf("entry %+v after tail %+v, now %+v", e, before, s.Tail)
				}
				next := before.SeqNum
				for i, a := range res.Appends {
					if a.Err != nil {
						if !e.IsRejected(i) {
							t.Fatalf("append %d failed (%v) but is not recorded as rejected", i, a.Err)
						}
						if errors.Is(a.Err, ErrTimestampRequired) && mode != ClientRequire {
							t.Fatalf("timestamp required outside client-require")
						}
						continue
					}
					if a.Start.SeqNum != next || a.End.SeqNum != next+uint64(len(appends[i].Records)) {
						t.Fatalf("append %d: %+v, expected start %d", i, a, next)
					}
					if a.Start.Timestamp < lastTS || a.End.Timestamp < a.Start.Timestamp {
						t.Fatalf("timestamps went back: %+v after %d", a, lastTS)
					}
					if mode == Arrival && a.Start.Timestamp != max(arrival, lastTS) {
						t.Fatalf("arrival mode: %d, arrival %d, last %d", a.Start.Timestamp, arrival, lastTS)
					}
					if !uncapped && mode != Arrival && a.End.Timestamp > max(arrival, lastTS) {
						t.Fatalf("capped timestamp %d beyond arrival %d", a.End.Timestamp, arrival)
					}
					if mode == ClientRequire {
						for _, r := range appends[i].Records {
							if !r.HasTimestamp {
								t.Fatalf("client-require accepted a record without timestamp")
							}
						}
					}
					lastTS = a.End.Timestamp
					next = a.End.SeqNum
				}
				if s.TrimPoint < lastTrim || s.TrimPoint > s.Tail.SeqNum {
					t.Fatalf("trim point %d (was %d, tail %d)", s.TrimPoint, lastTrim, s.Tail.SeqNum)
				}
				lastTrim = s.TrimPoint
				rebuilt, err := Results(&e, appends)
				if err != nil || !reflect.DeepEqual(rebuilt, res.Appends) {
					t.Fatalf("rebuild: %v\n%+v\n%+v", err, rebuilt, res.Appends)
				}
			}
			got, err := Decode("m", s.Encode())
			if err != nil || !reflect.DeepEqual(got, s) {
				t.Fatalf("round trip: %v", err)
			}
		}
	}
}

func TestGroupsAndPrune(t *testing.T) {
	cfg := DefaultConfig()
	cfg.QueueMode = true
	s := newState(t, cfg)
	for i := range 10 {
		s.Apply(batch("p", uint64(i+1), uint64(1000*(i+1)), &batchfmt.AppendInput{Records: recs(10)}))
	}
	e1 := s.OpenGroup("a")
	e2 := s.OpenGroup("a")
	if e1 == 0 || e2 != e1+1 || s.Groups["a"].Epoch != e2 {
		t.Fatalf("epochs %d %d, group %+v", e1, e2, s.Groups["a"])
	}
	var stale *StaleEpochError
	if _, err := s.SetCheckpoint("a", e1, 5); !errors.As(err, &stale) || stale.Epoch != e1 || stale.Current != e2 {
		t.Fatalf("want StaleEpochError, got %v", err)
	}
	if _, err := s.SetCheckpoint("nope", e1, 5); !errors.Is(err, ErrNoGroup) {
		t.Fatalf("want ErrNoGroup, got %v", err)
	}
	if _, err := s.SetCheckpoint("a", e2, 1000); err == nil {
		t.Fatal("checkpoint past the tail accepted")
	}
	if ok, err := s.SetCheckpoint("a", e2, 35); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, _ := s.SetCheckpoint("a", e2, 20); ok {
		t.Fatal("checkpoint moved backwards")
	}
	// Queue mode: a second group holds entries back until it acks too.
	b := s.OpenGroup("b")
	if p := s.DropPoint(0); p != 0 {
		t.Fatalf("drop point %d with group b at 0", p)
	}
	s.SetCheckpoint("b", b, 60)
	if p := s.DropPoint(0); p != 35 {
		t.Fatalf("drop point %d, want 35", p)
	}
	if n := s.Prune(0); n != 3 || s.FirstSeq() != 30 {
		t.Fatalf("pruned %d, first seq %d", n, s.FirstSeq())
	}
	// Retention by age (arrival ms): entries older than 5 s at t=9.5 s go.
	s.Config = Config{Retention: Retention{AgeSecs: 5}}
	if p := s.DropPoint(9500); p != 40 {
		t.Fatalf("age drop point %d, want 40", p)
	}
	// Never past the tail, and the newest entry stays.
	s.TrimPoint = s.Tail.SeqNum
	s.Prune(0)
	if len(s.Entries) != 1 || s.Entries[0].EndSeq() != s.Tail.SeqNum {
		t.Fatalf("entries left %d", len(s.Entries))
	}
	if _, err := Decode("m", s.Encode()); err != nil {
		t.Fatal(err)
	}
}

func TestLoadOrCreateRetries(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(3) {
		mem := objectstore.NewMemStore()
		fs, err := faultstore.New(mem, seed, faultstore.Rule{ErrBefore: 0.3, ErrAfter: 0.3})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := Open(fs, "m").LoadOrCreate(ctx, DefaultConfig(), time.Now())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		fs.SetEnabled(false)
		got, err := Open(mem, "m").Load(ctx)
		if err != nil || got.State.Generation != snap.State.Generation {
			t.Fatalf("seed %d: loaded %v, generation differs from the one returned", seed, err)
		}
	}
}

func TestPruneProducers(t *testing.T) {
	s := newState(t, DefaultConfig())
	const day = uint64(24 * time.Hour / time.Millisecond)
	// A small table never expires.
	s.Producers["old"] = ProducerState{LastBatch: 1, LastSeenMs: 1}
	s.PruneProducers(10 * day)
	if _, ok := s.Producers["old"]; !ok {
		t.Fatal("row of a small table expired")
	}
	// A big table: rows older than the expiry go, judged against the median, so one producer
	// with a clock days ahead does not expire the others.
	for i := range MaxProducers/2 + 10 {
		s.Producers[fmt.Sprintf("p%d", i)] = ProducerState{LastBatch: 1, LastSeenMs: 5 * day}
	}
	s.PruneProducers(100 * day) // a fast clock
	if _, ok := s.Producers["p0"]; !ok || len(s.Producers) != MaxProducers/2+10 {
		t.Fatalf("fast clock expired rows: %d left", len(s.Producers))
	}
	s.PruneProducers(5*day + 10)
	if _, ok := s.Producers["old"]; ok || len(s.Producers) != MaxProducers/2+10 {
		t.Fatalf("stale row kept or others lost: %d rows", len(s.Producers))
	}
	// Beyond MaxProducers the least recently seen go first.
	for i := range MaxProducers {
		s.Producers[fmt.Sprintf("q%d", i)] = ProducerState{LastBatch: 1, LastSeenMs: 6 * day}
	}
	s.PruneProducers(6 * day)
	if len(s.Producers) != MaxProducers {
		t.Fatalf("%d rows, want %d", len(s.Producers), MaxProducers)
	}
	for id := range s.Producers {
		if id[0] != 'q' {
			t.Fatalf("row %s kept over more recent ones", id)
		}
	}
}
