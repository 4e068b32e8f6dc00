package server_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// A unary read may long-poll for up to 60 s (wait ≤ MaxWaitSecs). ServeHTTP gives every unary
// call a read deadline of writeTimeout (30 s by default); on HTTP/1.1, net/http's background
// read hitting that deadline during the long poll would cancel the request context, and the
// read fail with 408 request_timeout ("context canceled") at writeTimeout instead of answering
// 200 when its wait ends, so a read clears it. Here the write timeout is shortened to show it
// quickly.
func TestUnaryLongPollOutlivesReadDeadline(t *testing.T) {
	const writeTimeout = 500 * time.Millisecond
	env := memStream(t, 0, server.WithWriteTimeout(writeTimeout))
	req, _ := http.NewRequestWithContext(t.Context(), "GET", env.URL+"/v1/streams/s/records?seq_num=0&wait=2", nil)
	req.Header.Set("S2-Basin", servertest.TestBasin)
	start := time.Now()
	res, err := env.H1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("long poll with wait=2 answered %d %s after %v, want 200 (an empty batch) after ~2s", res.StatusCode, body, time.Since(start).Round(time.Millisecond))
	}
}
