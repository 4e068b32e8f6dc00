package engine

import (
	"fmt"
	"io"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// TestAppendSessionPipelines: an append session hands its inputs to the producer as they
// arrive rather than one commit round trip each, so that many pipelined inputs (as S2's
// clients send them, waiting at most 5 s for each ack) commit in a few manifest writes and
// are acknowledged in order, not one commit per input, a flush interval apart (800
// single-record inputs would take 800 commits, and ack 446 come after 5 s).
func TestAppendSessionPipelines(t *testing.T) {
	var e *Engine
	env := servertest.Start(t, func(t testing.TB) server.Backend {
		e = newEngine(t, objectstore.NewMemStore(), nil)
		return e.S2()
	})
	env.CreateStream(t, "p")
	sess := env.OpenAppendSession(t, "p")
	const inputs = 800
	go func() {
		for i := range inputs {
			if !sess.Send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: fmt.Appendf(nil, "record %d", i)}}}) {
				return
			}
		}
		sess.Close()
	}()
	for i := range inputs {
		f, err := sess.Next()
		if err != nil || f.Terminal {
			t.Fatalf("ack %d: %+v %s %v", i, f, f.Body, err)
		}
		a, err := s2api.DecodeAppendAckProto(f.Body)
		if err != nil || a.Start.SeqNum != uint64(i) || a.End.SeqNum != uint64(i+1) || a.Tail.SeqNum < a.End.SeqNum {
			t.Fatalf("ack %d: %+v %v", i, a, err)
		}
	}
	if _, err := sess.Next(); err != io.EOF {
		t.Fatalf("after the last ack: %v", err)
	}
	snap, err := e.Stream(t.Context(), servertest.TestBasin, "p")
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Tail.SeqNum != inputs {
		t.Fatalf("tail %d, want %d", snap.State.Tail.SeqNum, inputs)
	}
	batches := len(snap.State.Entries)
	t.Logf("%d inputs committed in %d batch objects", inputs, batches)
	if batches > inputs/8 {
		t.Fatalf("%d inputs went into %d batch objects: the session did not pipeline them", inputs, batches)
	}
}
