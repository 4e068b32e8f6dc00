package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// holdFirstUpload holds the first upload under prefix until gate closes, signalling entered.
type holdFirstUpload struct {
	objectstore.Store
	prefix  string
	gate    chan struct{}
	entered chan struct{}
	once    atomic.Bool // only the first data upload is held
}

func (g *holdFirstUpload) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if strings.HasPrefix(key, g.prefix) && g.once.CompareAndSwap(false, true) {
		g.entered <- struct{}{}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, ctx.Err())
		}
	}
	return g.Store.Put(ctx, key, body, size, cond)
}

// A session's input is held in upload when its stream is deleted and created again; the
// session's next input goes to the new stream's producer. It must wait for the first to
// fail, then fail with ErrPrecedingAppendFailed, and the new stream must stay empty (before
// producer.Append with WithChain waited, the second committed while the first was still pending).
// The 200 ms only decides when the first is let go if the second is (rightly) waiting.
func TestAppendAsyncChainAcrossRecreate(t *testing.T) {
	ctx := t.Context()
	mem := objectstore.NewMemStore()
	st, _ := stream.Locate("", "s")
	g := &holdFirstUpload{Store: mem, prefix: st.DataPrefix() + "/", gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	e := newEngine(t, g, nil)
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	in := func(b string) batchfmt.AppendInput {
		return batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(b)}}}
	}
	chain := new(producer.Chain)
	w1, err := e.AppendAsync(ctx, "", "s", in("first"), chain)
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	if _, err := e.DeleteStream(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateStream(ctx, "", "s", manifest.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	type res struct {
		w   func(context.Context) (producer.Ack, error)
		err error
	}
	second := make(chan res, 1)
	go func() {
		w, err := e.AppendAsync(ctx, "", "s", in("second"), chain)
		second <- res{w, err}
	}()
	var r res
	select {
	case r = <-second: // handed over at once: let it commit (or not) while first is held
		if r.err == nil {
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, r.err = r.w(wctx)
			cancel()
		}
		close(g.gate)
	case <-time.After(200 * time.Millisecond): // waiting for first, as it should
		close(g.gate)
		r = <-second
		if r.err == nil {
			_, r.err = r.w(ctx)
		}
	}
	if _, err := w1(ctx); err == nil {
		t.Fatalf("first committed into a deleted stream")
	}
	if !errors.Is(r.err, manifest.ErrPrecedingAppendFailed) {
		t.Errorf("second: %v, want ErrPrecedingAppendFailed", r.err)
	}
	tail, err := e.Tail(ctx, "", "s")
	if err != nil {
		t.Fatal(err)
	}
	if tail.SeqNum != 0 {
		t.Errorf("new stream holds %d records after the session's first input failed", tail.SeqNum)
	}
}
