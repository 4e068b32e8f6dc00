package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// TestAbortedSessionsKeepTheConnection: clients that open read and append sessions (SSE and
// S2S) over one HTTP/2 connection and abort them, before or after the response starts, 32 at
// a time, 16,000 in all, never make the server close the connection (Go's rapid-reset guard
// answers ENHANCE_YOUR_CALM once more than four times MaxConcurrentStreams handlers of reset
// streams are still running): every session's handler returns as soon as its stream is
// reset.
func TestAbortedSessionsKeepTheConnection(t *testing.T) {
	env := servertest.Start(t, func(t testing.TB) server.Backend {
		return newEngine(t, objectstore.NewMemStore(), nil).S2()
	})
	if r := apiDo(t, env, "POST", "/v1/streams", nil, []byte(`{"stream":"s"}`)); r.status/100 != 2 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for _, kind := range []string{"sse", "s2s", "sse-early", "append-early", "append"} {
		var calm, other, ok atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					ctx, cancel := context.WithCancel(context.Background())
					var req *http.Request
					if strings.HasPrefix(kind, "append") {
						pr, pw := io.Pipe()
						defer pw.Close()
						req, _ = http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/streams/s/records", pr)
						req.Header.Set("Content-Type", "s2s/proto")
					} else {
						req, _ = http.NewRequestWithContext(ctx, "GET", env.URL+"/v1/streams/s/records?seq_num=0", nil)
						if strings.HasPrefix(kind, "sse") {
							req.Header.Set("Accept", "text/event-stream")
						} else {
							req.Header.Set("Content-Type", "s2s/proto")
						}
					}
					req.Header.Set("S2-Basin", servertest.TestBasin)
					if strings.HasSuffix(kind, "early") {
						go cancel()
					}
					res, err := env.H2C.Do(req)
					if err == nil {
						ok.Add(1)
						cancel()
						res.Body.Close()
						continue
					}
					cancel()
					// An early abort may surface as the request body's pipe closed by the
					// cancellation, the client's own doing, rather than as the context's error.
					if strings.Contains(err.Error(), "context canceled") || strings.HasSuffix(kind, "early") && (errors.Is(err, io.ErrClosedPipe) || strings.Contains(err.Error(), io.ErrClosedPipe.Error())) {
						ok.Add(1)
					} else if strings.Contains(err.Error(), "ENHANCE_YOUR_CALM") {
						calm.Add(1)
					} else {
						other.Add(1)
						if other.Load() < 3 {
							t.Logf("err: %v", err)
						}
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: ok %d, calm %d, other %d", kind, ok.Load(), calm.Load(), other.Load())
		if calm.Load() != 0 || other.Load() != 0 || ok.Load() != 32*100 {
			t.Errorf("%s: %d sessions aborted cleanly, %d connection closes (ENHANCE_YOUR_CALM), %d other errors; want all 3200 clean", kind, ok.Load(), calm.Load(), other.Load())
		}
	}
}
