package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
)

// storageFailing is a Backend whose tail, read and append fail with its error (its basins
// create no streams).
type storageFailing struct {
	server.Backend
	err error
}

func (f storageFailing) CheckTail(context.Context, string, string) (s2api.StreamPosition, error) {
	return s2api.StreamPosition{}, f.err
}

func (f storageFailing) Append(context.Context, string, string, batchfmt.AppendInput) (s2api.AppendAck, error) {
	return s2api.AppendAck{}, f.err
}

func (f storageFailing) Read(context.Context, string, string, s2api.ReadStart) (server.ReadCursor, error) {
	return failingCursor{f.err}, nil
}

func (storageFailing) GetBasinConfig(context.Context, string) (s2api.BasinConfig, error) {
	return s2api.BasinConfig{}, nil
}

type failingCursor struct{ err error }

func (c failingCursor) Next(context.Context, server.ReadLimit, bool) (s2api.ReadBatch, error) {
	return s2api.ReadBatch{}, c.err
}
func (failingCursor) Close() error { return nil }

// Every 5xx is logged once, with its cause, through the server's logger (at Error for a 500,
// Warn for a 503), while the answer hides the cause; 4xx answers are not logged.
func TestFailuresAreLoggedOnceWithTheirCause(t *testing.T) {
	const cause = "disk on fire at /secret/path"
	for _, c := range []struct {
		name   string
		err    error
		level  string
		status int
	}{
		{"storage", &s2api.Error{Code: s2api.CodeStorage, Message: "storage error", Err: errors.New(cause)}, "ERROR", 500},
		{"unavailable", &s2api.Error{Code: s2api.CodeUnavailable, Message: "try again", Err: errors.New(cause)}, "WARN", 503},
		{"not found", &s2api.Error{Code: s2api.CodeStreamNotFound, Message: "no such stream", Err: errors.New(cause)}, "", 404},
	} {
		for _, call := range []struct {
			name, method, target, ct, accept string
			body                             []byte
		}{
			{"tail", "GET", "/v1/streams/s/records/tail", "", "", nil},
			{"append", "POST", "/v1/streams/s/records", "application/json", "", []byte(`{"records":[{"body":"x"}]}`)},
			{"s2s append", "POST", "/v1/streams/s/records", "s2s/proto", "", s2sAppendFrame(t)},
			{"s2s read", "GET", "/v1/streams/s/records?seq_num=0", "s2s/proto", "", nil},
			{"sse read", "GET", "/v1/streams/s/records?seq_num=0", "", "text/event-stream", nil},
		} {
			var logs bytes.Buffer
			srv, err := server.New(storageFailing{err: c.err}, server.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			req, _ := http.NewRequest(call.method, ts.URL+call.target, bytes.NewReader(call.body))
			req.Header.Set("S2-Basin", "test-basin")
			if call.ct != "" {
				req.Header.Set("Content-Type", call.ct)
			}
			if call.accept != "" {
				req.Header.Set("Accept", call.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ts.Close()
			srv.Close()
			where := c.name + ", " + call.name
			if strings.Contains(string(body), cause) {
				t.Errorf("%s: the answer shows the cause: %q", where, body)
			}
			var lines []map[string]any
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var m map[string]any
				if l != "" && json.Unmarshal([]byte(l), &m) == nil && strings.Contains(l, cause) {
					lines = append(lines, m)
				}
			}
			if c.level == "" {
				if len(lines) != 0 {
					t.Errorf("%s: a %d was logged: %v", where, c.status, lines)
				}
				continue
			}
			if len(lines) != 1 || lines[0]["level"] != c.level || lines[0]["status"] != float64(c.status) {
				t.Errorf("%s: want one %s line with status %d and the cause, got %v (answer %d %q)", where, c.level, c.status, lines, resp.StatusCode, body)
			}
		}
	}
}

func s2sAppendFrame(t *testing.T) []byte {
	t.Helper()
	f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
