package main

import (
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/s2api"
)

// TestAPIAppenderSendsInOrderOneAtATime: an apiAppender's appends reach the daemon one at a
// time, in submit order, each with its records; after a refusal the appends behind it are not
// sent and fail, and close waits for all of them.
func TestAPIAppenderSendsInOrderOneAtATime(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(testseed.Get(t), 35))
	n := 20 + rng.IntN(30)
	failAt := 5 + rng.IntN(n-10)
	var inFlight, overlaps, calls atomic.Int64
	var next uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inFlight.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer inFlight.Add(-1)
		i := calls.Add(1) - 1
		time.Sleep(time.Duration(i%2) * time.Millisecond) // a slow call must hold the next back
		body, _ := io.ReadAll(r.Body)
		in, err := s2api.DecodeAppendInputJSON(body, s2api.FormatBase64)
		if err != nil || r.URL.Path != "/v1/streams/s/records" || r.Header.Get("S2-Basin") != "some-basin" {
			http.Error(w, fmt.Sprintf("bad call %s: %v", r.URL.Path, err), 400)
			return
		}
		if want := fmt.Sprint(i); string(in.Records[0].Body) != want {
			http.Error(w, fmt.Sprintf("append %d carries %q, want %q", i, in.Records[0].Body, want), 400)
			return
		}
		if int(i) == failAt {
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = w.Write([]byte(`{"fencing_token_mismatch":"other"}`))
			return
		}
		start := next
		next += uint64(len(in.Records))
		fmt.Fprintf(w, `{"start":{"seq_num":%d,"timestamp":1},"end":{"seq_num":%d,"timestamp":1},"tail":{"seq_num":%d,"timestamp":1}}`, start, next, next)
	}))
	defer srv.Close()
	b, err := newAPIBackend(&globals{endpoint: srv.URL, logLevel: "info", logFormat: "text"}, ptrTo("some-basin"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := b.openAppender(t.Context(), "s", appendOptions{deliveryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var ws []ackWaiter
	for i := range n {
		w, err := a.submit(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(fmt.Sprint(i))}}})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		ack, err := w.wait()
		switch {
		case i < failAt && (err != nil || ack.Start.SeqNum != uint64(i) || ack.End.SeqNum != uint64(i+1)):
			t.Errorf("append %d: ack %+v, %v; want [%d, %d)", i, ack, err, i, i+1)
		case i == failAt && (err == nil || !strings.Contains(err.Error(), `fencing token mismatch, the stream's fencing token is "other"`)):
			t.Errorf("append %d (refused): %v", i, err)
		case i > failAt && !errors.Is(err, errPrecedingAppend):
			t.Errorf("append %d after the refusal: %v, want errPrecedingAppend", i, err)
		}
	}
	if got := calls.Load(); got != int64(failAt+1) {
		t.Errorf("the daemon got %d appends, want %d (none after the refused one)", got, failAt+1)
	}
	if o := overlaps.Load(); o != 0 {
		t.Errorf("%d appends were sent while another was in flight", o)
	}
}

func ptrTo[T any](v T) *T { return &v }
