package sim

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

var (
	flagSeeds = flag.Int("sim.seeds", 0, "number of seeds TestSim runs (default 1000, or $SLUICE_SIM_SEEDS)")
	flagSeed  = flag.Int64("sim.seed", -1, "run only this seed (replay)")
	flagFirst = flag.Uint64("sim.first", 0, "first seed of the range")
	flagTrace = flag.Bool("sim.trace", false, "print every run's trace")
)

func seedCount(t *testing.T) int {
	if *flagSeeds > 0 {
		return *flagSeeds
	}
	if v := os.Getenv("SLUICE_SIM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("SLUICE_SIM_SEEDS=%q is not a positive number", v)
		}
		return n
	}
	if testing.Short() {
		return 100
	}
	return 1000
}

// runSeed runs one seed in a synctest bubble and reports its violations with the replay
// command.
func runSeed(t *testing.T, sc Scenario) Result {
	t.Helper()
	var res Result
	var runErr error
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour) // virtual time
		defer cancel()
		res, runErr = Run(ctx, sc)
	})
	if runErr != nil || len(res.Violations) > 0 || *flagTrace {
		var b strings.Builder
		fmt.Fprintf(&b, "seed %d: scenario %+v\n", sc.Seed, sc)
		fmt.Fprintf(&b, "summary: %s\n", summary(res))
		for _, line := range res.Trace {
			fmt.Fprintf(&b, "  %s\n", line)
		}
		for _, v := range res.Violations {
			fmt.Fprintf(&b, "VIOLATION: %v\n", v)
		}
		if runErr != nil {
			fmt.Fprintf(&b, "RUN ERROR: %v\n", runErr)
		}
		fmt.Fprintf(&b, "replay: go test ./sim -run TestSim -sim.seed=%d -v", sc.Seed)
		if runErr != nil || len(res.Violations) > 0 {
			t.Error(b.String())
		} else {
			t.Log(b.String())
		}
	}
	return res
}

func summary(r Result) string {
	return fmt.Sprintf("appended %d, acked %d, present %d records; %d producer instances, %d crashes, %d late writes; "+
		"faults %+v; %d members delivered %d; %d gc passes deleted %d; %d manifest writes, max %d entries, max %d refs/level, %d segment refs; %d records dropped",
		r.Appended, r.Acked, r.Present, r.ProducerInstances, r.Crashes, r.LateWrites, r.Faults,
		r.Members, r.Delivered, r.GCPasses, r.Deleted, r.ManifestWrites, r.MaxEntries, r.MaxRefs, r.Segments, r.Dropped)
}

// TestSim runs the simulation over many seeds (1000; -sim.seeds or SLUICE_SIM_SEEDS for
// more, -short for 100) and replays one with -sim.seed. It also checks that the seeds, taken
// together, exercised what they are meant to: crashes, late writes, every fault kind,
// collection, consumer restarts and sealing.
func TestSim(t *testing.T) {
	if *flagSeed >= 0 {
		sc := NewScenario(uint64(*flagSeed))
		t.Logf("seed %d", sc.Seed)
		res := runSeed(t, sc)
		t.Logf("%s", summary(res))
		return
	}
	n := seedCount(t)
	t.Logf("seeds %d..%d (replay one with -sim.seed=N)", *flagFirst, *flagFirst+uint64(n)-1)
	var mu sync.Mutex
	var total Result
	var crashedMembers, sealed, queueDrops, zombies, windows, fences int
	t.Run("seeds", func(t *testing.T) {
		for i := range n {
			seed := *flagFirst + uint64(i)
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				t.Parallel()
				res := runSeed(t, NewScenario(seed))
				mu.Lock()
				defer mu.Unlock()
				total.Appended += res.Appended
				total.Acked += res.Acked
				total.Expired += res.Expired
				total.CommitterCommits += res.CommitterCommits
				total.Lost += res.Lost
				total.Crashes += res.Crashes
				total.LateWrites += res.LateWrites
				total.Faults.Before += res.Faults.Before
				total.Faults.After += res.Faults.After
				total.Faults.Delayed += res.Faults.Delayed
				total.Faults.BodyErrors += res.Faults.BodyErrors
				total.Deleted += res.Deleted
				total.Delivered += res.Delivered
				if res.Members > 1 {
					crashedMembers++
				}
				if res.Segments > 0 {
					sealed++
				}
				zombies += res.Zombies
				windows += res.JournalWindows
				fences += res.JournalFences
				if res.Dropped > 0 {
					queueDrops++
				}
			})
		}
	})
	t.Logf("committers: %d requests committed, %d requests or replies lost; journals: %d windows, %d fences (sealed journals)", total.CommitterCommits, total.Lost, windows, fences)
	t.Logf("total: appended %d, acked %d, expired %d records; %d crashes; %d late writes; faults %+v; gc deleted %d objects; consumers delivered %d (%d runs restarted a member); %d runs sealed segments; %d queue runs dropped consumed entries; %d zombie members",
		total.Appended, total.Acked, total.Expired, total.Crashes, total.LateWrites, total.Faults, total.Deleted, total.Delivered, crashedMembers, sealed, queueDrops, zombies)
	if n < 100 {
		return
	}
	// A suite that exercised nothing would pass vacuously.
	for what, got := range map[string]int64{
		"acked records": int64(total.Acked), "expired records": int64(total.Expired), "crashes": int64(total.Crashes), "late writes": total.LateWrites,
		"errors before": total.Faults.Before, "errors after": total.Faults.After, "delays": total.Faults.Delayed,
		"body errors": total.Faults.BodyErrors, "gc deletions": int64(total.Deleted), "deliveries": int64(total.Delivered),
		"member restarts": int64(crashedMembers), "sealing runs": int64(sealed), "queue drops": int64(queueDrops),
		"zombie members": int64(zombies), "committer commits": int64(total.CommitterCommits),
		"lost commit requests or replies": int64(total.Lost),
		"journal windows":                 int64(windows), "sealed journals": int64(fences),
	} {
		if got == 0 {
			t.Errorf("%d seeds produced no %s", n, what)
		}
	}
}

// TestCheckerCatches damages the outcome of a clean run in the ways the checks exist for and
// expects each to be reported: a checker that cannot fail proves nothing.
func TestCheckerCatches(t *testing.T) {
	base := NewScenario(3)
	base.Producers, base.Appends, base.Crashes, base.Consumer, base.GC = 2, 10, 0, true, true
	firstEntry := func(h *harness) string {
		recs, st, _, err := readStream(context.Background(), h.base, h.sc.Stream.ManifestKey())
		if err != nil || len(recs) == 0 || len(st.Entries) == 0 {
			t.Errorf("sabotage: no stream to damage: %v", err)
			return ""
		}
		return st.Entries[0].Key
	}
	for _, tc := range []struct {
		name, want string
		sabotage   func(h *harness)
		afterGC    func(h *harness)
	}{
		{"referenced object deleted", "was deleted", func(h *harness) {
			if key := firstEntry(h); key != "" {
				h.led.Delete(context.Background(), key)
			}
		}, nil},
		{"acked record misplaced", "its ack says", func(h *harness) {
			h.acked[0].ack.Start.SeqNum++
			h.acked[0].ack.End.SeqNum++
		}, nil},
		{"acked record lost", "is missing", func(h *harness) {
			h.acked = append(h.acked, ackedAppend{bodies: []string{"never.written"}, ack: h.acked[0].ack})
			h.acked[len(h.acked)-1].ack.End.SeqNum = h.acked[len(h.acked)-1].ack.Start.SeqNum + 1
		}, nil},
		{"record of an expired append present", "failed with ErrDeliveryTimeout", func(h *harness) {
			h.expired[h.acked[0].bodies[0]] = true
		}, nil},
		{"record never appended", "never appended", func(h *harness) {
			delete(h.appended, h.acked[0].bodies[0]) // an acked record is in the stream
		}, nil},
		{"consumer saw a different record", "the stream holds", func(h *harness) {
			for _, m := range h.members {
				if len(m.recs) > 0 {
					m.recs[0].Body = []byte("forged")
					return
				}
			}
		}, nil},
		{"checkpoint went back", "below the previous member", func(h *harness) {
			h.members = append(h.members, &member{start: 0}, &member{start: 0})
			h.members[len(h.members)-2].start = 1
			h.members[len(h.members)-2].ackedThru = 1
		}, nil},
		{"orphan left behind", "survived the final collection", nil, func(h *harness) {
			objectstore.PutBytes(context.Background(), h.base, h.sc.Stream.DataPrefix()+"/0000000000010123456789abcdef", []byte("x"), objectstore.Unconditional())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := base
			sc.sabotage, sc.afterGC = tc.sabotage, tc.afterGC
			var res Result
			synctest.Test(t, func(t *testing.T) {
				var err error
				res, err = Run(context.Background(), sc)
				if err != nil {
					t.Fatal(err)
				}
			})
			found := false
			for _, v := range res.Violations {
				found = found || strings.Contains(v.Error(), tc.want)
			}
			if !found {
				t.Errorf("no violation mentioning %q; got %v", tc.want, res.Violations)
			}
		})
	}
	// The undamaged run is clean.
	var res Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		if res, err = Run(context.Background(), base); err != nil {
			t.Fatal(err)
		}
	})
	if len(res.Violations) > 0 || res.Acked == 0 {
		t.Errorf("clean run: %d acked, violations %v", res.Acked, res.Violations)
	}
}
