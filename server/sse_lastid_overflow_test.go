package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/server/servertest"
)

// A resumed SSE read starts after the last seq_num of the Last-Event-ID ("On reconnect … from
// the next seq_num", S2-API.md, SSE read sessions). No seq_num follows 2^64-1: such an id is
// refused as a bad header. Computed as last+1 it once wrapped to seq_num 0, and the session
// replayed the stream from its first record.
func TestSSELastEventIDSeqNumOverflow(t *testing.T) {
	env := memStream(t, 3)
	ctx := t.Context()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", env.URL+"/v1/streams/s/records?seq_num=0&count=3", nil)
	req.Header.Set("S2-Basin", servertest.TestBasin)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "18446744073709551615,0,0")
	res, err := env.H1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"bad_header"`) {
		t.Fatalf("resume after seq_num 2^64-1: status %d, body:\n%s\nwant 400 bad_header (no record follows it), not a replay from seq_num 0", res.StatusCode, body)
	}
}
