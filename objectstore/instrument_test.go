package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

type recorder struct {
	mu     sync.Mutex
	events []objectstore.OpEvent
}

func (r *recorder) ObserveOp(e objectstore.OpEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func TestInstrumentedConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		return objectstore.Instrument(objectstore.NewMemStore(), &recorder{})
	})
}

func TestInstrumentEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rec := &recorder{}
		slow, err := faultstore.New(objectstore.NewMemStore(), 1,
			faultstore.Rule{Ops: []objectstore.Op{objectstore.OpPut}, DelayProb: 1, Delay: 250 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s := objectstore.Instrument(slow, rec)
		if _, err := objectstore.PutBytes(ctx, s, "a", []byte("hello"), objectstore.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		_, err = objectstore.PutBytes(ctx, s, "a", []byte("again"), objectstore.IfAbsent())
		obj, gerr := s.Get(ctx, "a", objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: 1, Length: 3}})
		if gerr != nil {
			t.Fatal(gerr)
		}
		io.ReadAll(obj.Body)
		obj.Body.Close()
		obj.Body.Close() // reported once
		s.Head(ctx, "missing")
		s.List(ctx, "", "", 0)
		s.Delete(ctx, "a")
		want := []struct {
			op      objectstore.Op
			bytes   int64
			objects int
			class   string
			dur     time.Duration
		}{
			{objectstore.OpPut, 5, 0, "", 250 * time.Millisecond},
			{objectstore.OpPut, 5, 0, "precondition_failed", 250 * time.Millisecond}, // mem reads the body first
			{objectstore.OpGet, 3, 0, "", 0},
			{objectstore.OpHead, 0, 0, "not_found", 0},
			{objectstore.OpList, 0, 1, "", 0},
			{objectstore.OpDelete, 0, 0, "", 0},
		}
		if !errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Fatalf("second create: %v", err)
		}
		if len(rec.events) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(rec.events), len(want), rec.events)
		}
		for i, w := range want {
			e := rec.events[i]
			if e.Op != w.op || e.Bytes != w.bytes || e.Objects != w.objects || objectstore.ErrorClass(e.Err) != w.class || e.Duration != w.dur {
				t.Errorf("event %d: %+v (class %q), want %+v", i, e, objectstore.ErrorClass(e.Err), w)
			}
		}
	})
}

func TestErrorClass(t *testing.T) {
	cases := map[string]error{
		"":                       nil,
		"not_found":              objectstore.NewOpError("get", "k", objectstore.ErrNotFound, nil),
		"outcome_unknown":        objectstore.NewOpError("put", "k", objectstore.ErrOutcomeUnknown, faultstore.ErrInjected),
		"injected":               objectstore.NewOpError("put", "k", nil, faultstore.ErrInjected),
		"deadline":               objectstore.NewOpError("put", "k", nil, context.DeadlineExceeded),
		"other":                  errors.New("boom"),
		"precondition_failed":    objectstore.ErrPreconditionFailed,
		"inconsistent":           objectstore.NewOpError("put", "k", objectstore.ErrInconsistent, errors.New("404")),
		"conditions_unsupported": objectstore.NewOpError("put", "k", objectstore.ErrConditionsUnsupported, nil),
		"no_bucket":              objectstore.NewOpError("list", "", objectstore.ErrNoBucket, errors.New("NoSuchBucket")),
		"access_denied":          objectstore.NewOpError("get", "k", objectstore.ErrAccessDenied, errors.New("403")),
	}
	for want, err := range cases {
		if got := objectstore.ErrorClass(err); got != want {
			t.Errorf("ErrorClass(%v) = %q, want %q", err, got, want)
		}
		// Refused: exactly the three classes no retry cures.
		if got, want := objectstore.Refused(fmt.Errorf("wrapped: %w", err)), want == "no_bucket" || want == "access_denied" || want == "conditions_unsupported"; got != want {
			t.Errorf("Refused(%v) = %v, want %v", err, got, want)
		}
	}
}
