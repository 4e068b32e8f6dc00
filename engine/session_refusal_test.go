package engine

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server/servertest"
)

// pipelinedSession sends inputs on one S2S append session (all written before any ack is
// read, as a pipelining client does) and returns the frames the server answers with.
func pipelinedSession(t *testing.T, env *servertest.Env, stream string, inputs []batchfmt.AppendInput) []s2api.Frame {
	t.Helper()
	var body bytes.Buffer
	for i := range inputs {
		f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &inputs[i])})
		if err != nil {
			t.Fatal(err)
		}
		body.Write(f)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", env.URL+"/v1/streams/"+stream+"/records", &body)
	req.Header.Set("S2-Basin", servertest.TestBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	res, err := env.H2C.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	fr := s2api.NewFrameReader(res.Body, 0)
	var out []s2api.Frame
	for {
		f, err := fr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Body = append([]byte(nil), f.Body...)
		out = append(out, f)
		if f.Terminal {
			return out
		}
	}
}

// TestSessionInputBeforeRefusedOneIsAcked: on a client-require stream, an append
// session's first input (timestamped) is valid and its second (without a timestamp) is not.
// S2 acknowledges the first and ends the session with the second's error. (Refusing the second at handover must not mark the chain failed: the first, still
// waiting for its commit, would be rejected too, with a misleading error.)
func TestSessionInputBeforeRefusedOneIsAcked(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		if r := apiDo(t, env, "POST", "/v1/streams", nil, []byte(`{"stream":"req","config":{"timestamping":{"mode":"client-require"}}}`)); r.status/100 != 2 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		frames := pipelinedSession(t, env, "req", []batchfmt.AppendInput{
			{Records: []batchfmt.Record{{Body: []byte("a"), Timestamp: 10, HasTimestamp: true}}},
			{Records: []batchfmt.Record{{Body: []byte("b")}}},
		})
		if len(frames) != 2 || frames[0].Terminal || !frames[1].Terminal {
			for i, f := range frames {
				t.Logf("frame %d: terminal=%v %s", i, f.Terminal, f.Body)
			}
			t.Fatalf("got %d frames, want an ack for the first input and then the second's error", len(frames))
		}
		if tail := apiTail(t, env, "req"); tail.SeqNum != 1 {
			t.Fatalf("tail %+v, want 1 (the first input committed)", tail)
		}
	})
}
