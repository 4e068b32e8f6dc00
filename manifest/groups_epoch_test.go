package manifest

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestDeletedGroupReopensAboveEveryEpoch: a group deleted and opened (or reset) again gets an
// epoch above every epoch the deleted group ever had, so that no member of the deleted group
// passes CheckEpoch of the new one (a member of the same epoch would write its checkpoint
// into a group that never read those records). Each operation is its own manifest write, as
// consumers and the CLI do it, mixed with writes that touch no group (appends) and with other
// groups; a random run follows a fixed one.
func TestDeletedGroupReopensAboveEveryEpoch(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := Open(store, "m")
	if _, err := m.Create(ctx, DefaultConfig(), time.UnixMilli(1000)); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(propertySeed(t), 31))
	groups := []string{"g", "h"}
	ever := map[string][]uint64{} // every epoch each group name ever had, in order
	batches := uint64(0)
	step := 0
	// do runs one operation as one Update and checks the epochs it leaves.
	do := func(what string, name string, fn func(s *State)) {
		t.Helper()
		step++
		var prevMax uint64 // the highest epoch any group of the stream had before the write
		for _, es := range ever {
			for _, e := range es {
				prevMax = max(prevMax, e)
			}
		}
		var existed bool
		snap, err := m.Update(ctx, func(s *State) error {
			_, existed = s.Groups[name]
			fn(s)
			return nil
		})
		if err != nil {
			t.Fatalf("step %d %s %q: %v", step, what, name, err)
		}
		g, ok := snap.State.Groups[name]
		if what == "delete" {
			if ok {
				t.Fatalf("step %d: group %q still there after its delete: %+v", step, name, g)
			}
			return
		}
		if !ok {
			t.Fatalf("step %d: %s %q left no group", step, what, name)
		}
		past := ever[name]
		switch {
		case !existed && g.Epoch <= prevMax:
			t.Fatalf("step %d: %s created %q at epoch %d, not above %d, an epoch the stream gave before (%q had %v)", step, what, name, g.Epoch, prevMax, name, past)
		case existed && g.Epoch <= past[len(past)-1]:
			t.Fatalf("step %d: %s of %q: epoch %d after %d, want it to increase", step, what, name, g.Epoch, past[len(past)-1])
		}
		// Every member the group ever had is fenced, whether the group was deleted since or not.
		for _, e := range past {
			var stale *StaleEpochError
			if err := snap.State.CheckEpoch(name, e); !errors.As(err, &stale) || stale.Current != g.Epoch {
				t.Fatalf("step %d: a member of %q at epoch %d is not fenced by epoch %d (history %v): %v", step, name, e, g.Epoch, past, err)
			}
		}
		if err := snap.State.CheckEpoch(name, g.Epoch); err != nil {
			t.Fatalf("step %d: the member that got epoch %d of %q: %v", step, g.Epoch, name, err)
		}
		ever[name] = append(past, g.Epoch)
	}
	open := func(name string) { do("open", name, func(s *State) { s.OpenGroup(name) }) }
	reset := func(name string) { do("reset", name, func(s *State) { s.ResetGroup(name, 0) }) }
	del := func(name string) { do("delete", name, func(s *State) { s.DeleteGroup(name) }) }
	appendOne := func() {
		batches++
		n := batches
		if _, err := m.Update(ctx, func(s *State) error {
			_, err := s.Apply(batch("p", n, 1000+n, &batchfmt.AppendInput{Records: recs(1)}))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	// Fixed: a few members, other writes, then the group is deleted and opened again; then
	// deleted and created again by a reset, right after the delete.
	for range 3 {
		open("g")
		appendOne()
		open("h")
	}
	del("g")
	appendOne()
	open("g")
	del("g")
	reset("g")
	if es := ever["g"]; len(es) != 5 {
		t.Fatalf("epochs of g %v", es)
	}

	// Random operations on two group names.
	live := map[string]bool{"g": true, "h": true}
	for range 300 {
		name := groups[rng.IntN(len(groups))]
		switch r := rng.IntN(10); {
		case r < 4:
			open(name)
			live[name] = true
		case r < 6:
			reset(name)
			live[name] = true
		case r < 8:
			if live[name] {
				del(name)
				live[name] = false
			}
		default:
			appendOne()
		}
	}
	if len(ever["g"]) < 6 || len(ever["h"]) < 4 {
		t.Fatalf("the random run opened too little: %v", ever)
	}
}
