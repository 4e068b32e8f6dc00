package storetest

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

func (s *suite) createOnly(t *testing.T, st objectstore.Store) {
	first := mustPut(t, st, "co", []byte("first"), objectstore.IfAbsent())
	_, err := objectstore.PutBytes(ctxFor(t), st, "co", []byte("second"), objectstore.IfAbsent())
	wantClass(t, err, objectstore.ErrPreconditionFailed, "create-only over an existing key")
	got, info := mustGet(t, st, "co")
	if string(got) != "first" {
		t.Fatalf("create-only overwrote: read %q", got)
	}
	checkInfo(t, "after failed create", info, first)
	// Contradictory conditions are refused without effect.
	_, err = objectstore.PutBytes(ctxFor(t), st, "co2", []byte("x"), objectstore.PutCondition{IfAbsent: true, IfMatch: first.Version})
	if err == nil {
		t.Fatal("put with both IfAbsent and IfMatch succeeded")
	}
	if _, err := st.Head(ctxFor(t), "co2"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("refused put left an object: head: %v", err)
	}
}

const (
	raceWorkers = 8
	raceRounds  = 12
)

func (s *suite) createOnlyRace(t *testing.T, st objectstore.Store) {
	for round := 0; round < 3; round++ {
		key := fmt.Sprintf("race/create/%d", round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wins := make([]bool, raceWorkers)
		errs := make([]error, raceWorkers)
		infos := make([]objectstore.ObjectInfo, raceWorkers)
		for w := 0; w < raceWorkers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				info, err := objectstore.PutBytes(ctxFor(t), st, key, []byte(fmt.Sprintf("worker %d", w)), objectstore.IfAbsent())
				infos[w], errs[w], wins[w] = info, err, err == nil
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for w := 0; w < raceWorkers; w++ {
			switch {
			case wins[w] && winner >= 0:
				t.Fatalf("round %d: workers %d and %d both created %q", round, winner, w, key)
			case wins[w]:
				winner = w
			case !errors.Is(errs[w], objectstore.ErrPreconditionFailed):
				t.Fatalf("round %d: worker %d: %v, want precondition failed", round, w, errs[w])
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no worker created %q", round, key)
		}
		got, info := mustGet(t, st, key)
		if want := fmt.Sprintf("worker %d", winner); string(got) != want {
			t.Fatalf("round %d: stored %q, winner wrote %q", round, got, want)
		}
		checkInfo(t, "winner's object", info, infos[winner])
	}
}

func (s *suite) casRace(t *testing.T, st objectstore.Store) {
	const key = "race/cas"
	cur := mustPut(t, st, key, []byte("round -1"), objectstore.IfAbsent())
	for round := 0; round < raceRounds; round++ {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, raceWorkers)
		infos := make([]objectstore.ObjectInfo, raceWorkers)
		for w := 0; w < raceWorkers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				body := fmt.Sprintf("round %d worker %d", round, w)
				infos[w], errs[w] = objectstore.PutBytes(ctxFor(t), st, key, []byte(body), objectstore.IfMatch(cur.Version))
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for w := 0; w < raceWorkers; w++ {
			switch {
			case errs[w] == nil && winner >= 0:
				t.Fatalf("round %d: workers %d and %d both swapped version %q", round, winner, w, cur.Version)
			case errs[w] == nil:
				winner = w
			case !errors.Is(errs[w], objectstore.ErrPreconditionFailed):
				t.Fatalf("round %d: worker %d: %v, want precondition failed", round, w, errs[w])
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody swapped version %q", round, cur.Version)
		}
		got, info := mustGet(t, st, key)
		if want := fmt.Sprintf("round %d worker %d", round, winner); string(got) != want {
			t.Fatalf("round %d: stored %q, winner wrote %q", round, got, want)
		}
		checkInfo(t, fmt.Sprintf("round %d winner", round), info, infos[winner])
		if info.Version == cur.Version {
			t.Fatalf("round %d: version unchanged (%q) after a swap", round, cur.Version)
		}
		cur = info
	}
}

func (s *suite) staleVersion(t *testing.T, st objectstore.Store) {
	v1 := mustPut(t, st, "stale", []byte("one"), objectstore.Unconditional())
	v2 := mustPut(t, st, "stale", []byte("two"), objectstore.IfMatch(v1.Version))
	_, err := objectstore.PutBytes(ctxFor(t), st, "stale", []byte("three"), objectstore.IfMatch(v1.Version))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "put with a stale version")
	_, err = objectstore.PutBytes(ctxFor(t), st, "stale", []byte("four"), objectstore.IfMatch("not-a-version"))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "put with a made-up version")
	got, info := mustGet(t, st, "stale")
	if string(got) != "two" {
		t.Fatalf("stale put overwrote: read %q", got)
	}
	checkInfo(t, "after stale put", info, v2)
	v3 := mustPut(t, st, "stale", []byte("five"), objectstore.IfMatch(v2.Version))
	if v3.Version == v2.Version || v3.Version == v1.Version {
		t.Fatalf("version %q repeats an earlier one (%q, %q)", v3.Version, v1.Version, v2.Version)
	}
}

func (s *suite) ifMatchMissing(t *testing.T, st objectstore.Store) {
	v := mustPut(t, st, "present", []byte("x"), objectstore.Unconditional())
	_, err := objectstore.PutBytes(ctxFor(t), st, "absent", []byte("y"), objectstore.IfMatch(v.Version))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "if-match put on a missing key")
	if _, err := st.Head(ctxFor(t), "absent"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("failed if-match put created the key: head: %v", err)
	}
}

func (s *suite) deleteThenCreate(t *testing.T, st objectstore.Store) {
	old := mustPut(t, st, "d/obj", []byte("old"), objectstore.IfAbsent())
	if err := st.Delete(ctxFor(t), "d/obj"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err := st.Get(ctxFor(t), "d/obj", objectstore.GetOptions{})
	wantClass(t, err, objectstore.ErrNotFound, "get after delete")
	_, err = st.Head(ctxFor(t), "d/obj")
	wantClass(t, err, objectstore.ErrNotFound, "head after delete")
	if err := st.Delete(ctxFor(t), "d/obj"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if err := st.Delete(ctxFor(t), "never/existed"); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
	_, err = objectstore.PutBytes(ctxFor(t), st, "d/obj", []byte("x"), objectstore.IfMatch(old.Version))
	wantClass(t, err, objectstore.ErrPreconditionFailed, "if-match on a deleted object")
	nu := mustPut(t, st, "d/obj", []byte("new"), objectstore.IfAbsent())
	got, info := mustGet(t, st, "d/obj")
	if string(got) != "new" {
		t.Fatalf("after re-create read %q", got)
	}
	checkInfo(t, "re-created", info, nu)
	page, err := st.List(ctxFor(t), "d/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "d/obj" {
		t.Fatalf("list after re-create: %+v", page.Objects)
	}
}

func (s *suite) getIfNoneMatch(t *testing.T, st objectstore.Store) {
	v1 := mustPut(t, st, "inm", []byte("one"), objectstore.Unconditional())
	_, err := st.Get(ctxFor(t), "inm", objectstore.GetOptions{IfNoneMatch: v1.Version})
	wantClass(t, err, objectstore.ErrNotModified, "get with the current version")
	_, err = st.Get(ctxFor(t), "inm", objectstore.GetOptions{IfNoneMatch: v1.Version, Range: &objectstore.ByteRange{Offset: 1, Length: 1}})
	wantClass(t, err, objectstore.ErrNotModified, "ranged get with the current version")
	v2 := mustPut(t, st, "inm", []byte("two"), objectstore.Unconditional())
	obj, err := st.Get(ctxFor(t), "inm", objectstore.GetOptions{IfNoneMatch: v1.Version})
	if err != nil {
		t.Fatalf("get with an old version: %v", err)
	}
	got, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil || string(got) != "two" {
		t.Fatalf("get with an old version read %q, %v", got, err)
	}
	checkInfo(t, "get with an old version", obj.ObjectInfo, v2)
	_, err = st.Get(ctxFor(t), "inm-missing", objectstore.GetOptions{IfNoneMatch: v1.Version})
	wantClass(t, err, objectstore.ErrNotFound, "if-none-match get of a missing key")
}
