package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server/servertest"
)

// S2's stream naming rule (S2's documentation, streams page, "Stream naming"): "Length: Between 1 and 512
// bytes". The server checks it on every route that names a stream, the empty name of a path
// such as /v1/streams// or /v1/streams//records included (it once skipped empty names, and
// a backend, which the Backend contract lets trust the server, created a stream named ""
// that list calls never showed).
func TestEmptyStreamNameInPathIsRejected(t *testing.T) {
	env := servertest.Start(t, newEngineBackend)
	yes := true
	if _, err := env.Backend.ReconfigureBasin(t.Context(), servertest.TestBasin, s2api.BasinReconfiguration{CreateStreamOnAppend: &yes}); err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, body []byte) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), method, env.URL+path, bytes.NewReader(body))
		req.Header.Set("S2-Basin", servertest.TestBasin)
		res, err := env.H1.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, c := range []struct {
		method, path, body string
	}{
		{"PUT", "/v1/streams//", `{}`},                                 // ensure stream ""
		{"POST", "/v1/streams//records", `{"records":[{"body":"x"}]}`}, // append, auto-creating stream ""
	} {
		status, body := do(c.method, c.path, []byte(c.body))
		if status != http.StatusUnprocessableEntity {
			t.Errorf("%s %s: %d %s; want 422 invalid (a stream name is 1 to 512 bytes)", c.method, c.path, status, body)
		}
	}
	if _, err := env.Backend.CheckTail(t.Context(), servertest.TestBasin, ""); err == nil {
		t.Errorf("the backend now holds a stream with the empty name")
	}
}
