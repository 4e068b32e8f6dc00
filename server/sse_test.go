package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server/servertest"
)

// A batch event's id is "<last seq_num>,<records so far>,<bytes so far>" where the totals count
// everything delivered for the read since it was first issued (s2-api's LastEventId: "Total
// records delivered", "Total metered bytes delivered"): a client (EventSource) that reconnects
// re-sends the original query (count=5) with Last-Event-ID, and the server subtracts the totals
// from count/bytes. The ids a resumed session sends must go on from the resumed totals (they
// once restarted at 0): else a second reconnect asks for more records than the read's count
// allows.
func TestSSEResumedSessionKeepsCumulativeEventIDs(t *testing.T) {
	env := memStream(t, 10) // 10 metered bytes each
	ctx := t.Context()
	// sse reads the session for the original query count=5 resumed after lastEventID; it
	// returns the records delivered and the id of the last batch event.
	sse := func(lastEventID string) (records int, lastID string) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(rctx, "GET", env.URL+"/v1/streams/s/records?seq_num=0&count=5", nil)
		req.Header.Set("S2-Basin", servertest.TestBasin)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", lastEventID)
		res, err := env.H1.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		r := s2api.NewSSEReader(res.Body, 1<<20)
		for {
			ev, err := r.Next()
			if err != nil {
				return records, lastID
			}
			if ev.Event != "batch" {
				continue
			}
			b, err := s2api.DecodeReadBatchJSON([]byte(ev.Data), s2api.FormatRaw)
			if err != nil {
				t.Fatal(err)
			}
			records += len(b.Records)
			if ev.ID != "" {
				lastID = ev.ID
			}
		}
	}
	// The client got record 0 (id "0,1,10") and reconnects.
	n1, id1 := sse("0,1,10")
	if n1 != 4 {
		t.Fatalf("first resume delivered %d records, want 4 (seq_num 1..4)", n1)
	}
	// After the first resume the client has 1+4 = 5 records, 50 bytes.
	if id1 != "4,5,50" {
		t.Errorf("last batch id after resuming from \"0,1,10\" is %q, want \"4,5,50\" (totals since the read began)", id1)
	}
	// Had the connection dropped right after that event, the client resumes with its id.
	if n2, _ := sse(id1); n2 != 0 {
		t.Errorf("second resume with Last-Event-ID %q delivered %d more records: %d in all for a read with count=5", id1, n2, 1+n1+n2)
	}
}

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
