package faultstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func newFaults(t *testing.T, seed uint64, rules ...faultstore.Rule) *faultstore.Store {
	t.Helper()
	f, err := faultstore.New(objectstore.NewMemStore(), seed, rules...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFaultStoreWithoutRulesConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store { return newFaults(t, 1) })
}

// outcome runs n puts and gets per key on keys and records a letter per call.
func outcomes(t *testing.T, f *faultstore.Store, keys []string, n int, parallel bool) map[string]string {
	ctx := context.Background()
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(k string) {
		defer wg.Done()
		var b strings.Builder
		for i := 0; i < n; i++ {
			_, err := objectstore.PutBytes(ctx, f, k, []byte{byte(i)}, objectstore.Unconditional())
			b.WriteString(class(err))
			_, _, err = objectstore.ReadAll(ctx, f, k)
			b.WriteString(class(err))
		}
		mu.Lock()
		out[k] = b.String()
		mu.Unlock()
	}
	for _, k := range keys {
		wg.Add(1)
		if parallel {
			go run(k)
		} else {
			run(k)
		}
	}
	wg.Wait()
	return out
}

func class(err error) string {
	switch {
	case err == nil:
		return "."
	case errors.Is(err, objectstore.ErrOutcomeUnknown):
		return "U"
	case errors.Is(err, objectstore.ErrNotFound):
		return "N"
	case errors.Is(err, faultstore.ErrInjected):
		return "X"
	}
	return "?"
}

func TestFaultStoreDeterministic(t *testing.T) {
	seed := storetest.Seed(t)
	rule := faultstore.Rule{ErrBefore: 0.2, ErrAfter: 0.2, BodyErr: 0.2}
	keys := []string{"a", "b/c", "d/e/f", "g", "h"}
	first := outcomes(t, newFaults(t, seed, rule), keys, 50, false)
	second := outcomes(t, newFaults(t, seed, rule), keys, 50, true)
	for _, k := range keys {
		if first[k] != second[k] {
			t.Fatalf("seed %d key %q:\nsequential %s\nparallel   %s", seed, k, first[k], second[k])
		}
		if !strings.ContainsAny(first[k], "XU") || !strings.Contains(first[k], ".") {
			t.Fatalf("seed %d key %q: %s: want both faults and successes at these rates", seed, k, first[k])
		}
	}
	other := outcomes(t, newFaults(t, seed+1, rule), keys, 50, false)
	same := 0
	for _, k := range keys {
		if other[k] == first[k] {
			same++
		}
	}
	if same == len(keys) {
		t.Fatalf("seeds %d and %d injected identical faults", seed, seed+1)
	}
}

func TestFaultStoreBeforeAndAfter(t *testing.T) {
	ctx := context.Background()
	f := newFaults(t, storetest.Seed(t),
		faultstore.Rule{Ops: []objectstore.Op{objectstore.OpPut}, Key: "before/", ErrBefore: 1},
		faultstore.Rule{Ops: []objectstore.Op{objectstore.OpPut, objectstore.OpDelete}, Key: "after/*", ErrAfter: 1},
	)
	inner := f.Inner()
	_, err := objectstore.PutBytes(ctx, f, "before/x", []byte("1"), objectstore.IfAbsent())
	if !errors.Is(err, faultstore.ErrInjected) || errors.Is(err, objectstore.ErrOutcomeUnknown) {
		t.Fatalf("before-fault: %v", err)
	}
	if _, err := inner.Head(ctx, "before/x"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("before-fault was applied: %v", err)
	}
	_, err = objectstore.PutBytes(ctx, f, "after/x", []byte("1"), objectstore.IfAbsent())
	if !errors.Is(err, objectstore.ErrOutcomeUnknown) || !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("after-fault: %v", err)
	}
	if _, err := inner.Head(ctx, "after/x"); err != nil {
		t.Fatalf("after-fault was not applied: %v", err)
	}
	// The second create fails in the inner store, but the answer is lost all the same: the
	// error is outcome-unknown only, not also precondition-failed.
	_, err = objectstore.PutBytes(ctx, f, "after/x", []byte("2"), objectstore.IfAbsent())
	if !errors.Is(err, objectstore.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("after-fault over a failed put: %v", err)
	}
	// The glob does not cross "/", and gets are not covered by the rules.
	if _, err := objectstore.PutBytes(ctx, f, "after/deeper/x", []byte("1"), objectstore.IfAbsent()); err != nil {
		t.Fatalf("glob after/* matched after/deeper/x: %v", err)
	}
	if _, _, err := objectstore.ReadAll(ctx, f, "after/x"); err != nil {
		t.Fatalf("get not covered by a rule failed: %v", err)
	}
	if err := f.Delete(ctx, "after/x"); !errors.Is(err, objectstore.ErrOutcomeUnknown) {
		t.Fatalf("delete after-fault: %v", err)
	}
	if _, err := inner.Head(ctx, "after/x"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("delete after-fault was not applied: %v", err)
	}
	put := f.Counts(objectstore.OpPut)
	if put.Calls != 4 || put.Before != 1 || put.After != 2 {
		t.Fatalf("put counts %+v, want 4 calls, 1 before, 2 after", put)
	}
	if tot := f.Total(); tot.Injected() != 4 {
		t.Fatalf("total %+v, want 4 injected", tot)
	}
	f.SetEnabled(false)
	if _, err := objectstore.PutBytes(ctx, f, "before/y", []byte("1"), objectstore.IfAbsent()); err != nil {
		t.Fatalf("disabled fault store injected: %v", err)
	}
}

func TestFaultStoreBodyError(t *testing.T) {
	ctx := context.Background()
	f := newFaults(t, storetest.Seed(t), faultstore.Rule{Ops: []objectstore.Op{objectstore.OpGet}, BodyErr: 1})
	data := []byte(strings.Repeat("0123456789", 100))
	if _, err := objectstore.PutBytes(ctx, f, "k", data, objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		obj, err := f.Get(ctx, "k", objectstore.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if !errors.Is(err, faultstore.ErrInjected) || len(got) >= len(data) || string(got) != string(data[:len(got)]) {
			t.Fatalf("read %d bytes, err %v: want a correct prefix then ErrInjected", len(got), err)
		}
	}
	if c := f.Counts(objectstore.OpGet); c.BodyErrors != 20 {
		t.Fatalf("counts %+v", c)
	}
}

func TestFaultStoreDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFaults(t, 7, faultstore.Rule{Ops: []objectstore.Op{objectstore.OpHead}, DelayProb: 1, Delay: time.Second, DelayJitter: time.Second})
		ctx := context.Background()
		start := time.Now()
		if _, err := f.Head(ctx, "missing"); !errors.Is(err, objectstore.ErrNotFound) {
			t.Fatalf("delayed head: %v", err)
		}
		if d := time.Since(start); d < time.Second || d >= 2*time.Second {
			t.Fatalf("delay %v, want in [1s, 2s)", d)
		}
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		if _, err := f.Head(cctx, "missing"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("delay past the deadline: %v", err)
		}
		if c := f.Counts(objectstore.OpHead); c.Delayed != 2 || c.Calls != 2 {
			t.Fatalf("counts %+v", c)
		}
	})
}

func TestFaultStoreRates(t *testing.T) {
	seed := storetest.Seed(t)
	f := newFaults(t, seed, faultstore.Rule{Ops: []objectstore.Op{objectstore.OpHead}, ErrBefore: 0.3})
	const n = 4000
	failed := 0
	for i := 0; i < n; i++ {
		if _, err := f.Head(context.Background(), fmt.Sprintf("k%d", i%37)); errors.Is(err, faultstore.ErrInjected) {
			failed++
		}
	}
	if rate := float64(failed) / n; rate < 0.25 || rate > 0.35 {
		t.Fatalf("seed %d: injected %d of %d (%.3f), want about 0.3", seed, failed, n, rate)
	}
}

func TestFaultRuleValidation(t *testing.T) {
	_, err := faultstore.New(objectstore.NewMemStore(), 1,
		faultstore.Rule{Ops: []objectstore.Op{"copy"}, ErrBefore: 1.5},
		faultstore.Rule{Key: "a[", ErrBefore: 0.6, ErrAfter: 0.6, Delay: time.Second},
	)
	if err == nil {
		t.Fatal("bad rules accepted")
	}
	for _, want := range []string{`unknown op "copy"`, "ErrBefore = 1.5", "bad key glob", "exceeds 1", "DelayProb is 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not mention %q", err, want)
		}
	}
}
