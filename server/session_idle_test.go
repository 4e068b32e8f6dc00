package server_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// An S2S append session over h2c (what the Node SDK uses by default) must survive an idle
// period longer than the write timeout: a producer may append, pause, and append again on the
// same session. On HTTP/2 a write deadline is a timer that resets the stream with
// RST_STREAM(INTERNAL_ERROR) when it fires, even with no write pending, so the server clears
// each frame's deadline once the frame is written (armWrite). When it did not, the SDK saw a
// non-retryable S2Error (status 0, "Stream closed with error code NGHTTP2_INTERNAL_ERROR").
func TestAppendSessionSurvivesIdleLongerThanWriteTimeout(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	env := memStream(t, 0, server.WithWriteTimeout(writeTimeout))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/streams/s/records", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", servertest.TestBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	req.Header.Set("Accept", "application/protobuf")
	res, err := env.H2C.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.ProtoMajor != 2 || res.StatusCode != 200 {
		t.Fatalf("response %s %d", res.Proto, res.StatusCode)
	}
	fr := s2api.NewFrameReader(res.Body, 0)
	appendOne := func(body string, wantStart uint64) {
		t.Helper()
		in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(body)}}}
		f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &in)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(f); err != nil {
			_, rerr := fr.Next()
			t.Fatalf("write input %q: %v (the response body says: %v)", body, err, rerr)
		}
		ack, err := fr.Next()
		if err != nil || ack.Terminal {
			t.Fatalf("ack for %q: frame %+v, err %v", body, ack, err)
		}
		a, err := s2api.DecodeAppendAckProto(ack.Body)
		if err != nil || a.Start.SeqNum != wantStart {
			t.Fatalf("ack for %q: %+v %v", body, a, err)
		}
	}
	appendOne("first", 0)
	time.Sleep(4 * writeTimeout) // the client is idle; nothing is pending on the server
	appendOne("second", 1)
}
