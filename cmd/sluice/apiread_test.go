package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/s2api"
)

// sseDaemon is a test daemon whose read sessions are scripted: the nth call runs script[n]
// (calls past the script fail the test).
func sseDaemon(t *testing.T, script ...func(w http.ResponseWriter, r *http.Request, sse *s2api.SSEWriter)) (*apiBackend, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1)) - 1
		if n >= len(script) || r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("S2-Format") != "base64" {
			t.Errorf("unexpected read session %d: %s %v", n, r.URL, r.Header)
			http.Error(w, "unexpected", 500)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		script[n](w, r, s2api.NewSSEWriter(w))
		w.(http.Flusher).Flush()
	}))
	t.Cleanup(srv.Close)
	b, err := newAPIBackend(&globals{endpoint: srv.URL, logLevel: "error", logFormat: "text"}, ptrTo("some-basin"))
	if err != nil {
		t.Fatal(err)
	}
	return b, &calls
}

func sendRecord(t *testing.T, sse *s2api.SSEWriter, seq uint64, body string) {
	b := &s2api.ReadBatch{Records: []s2api.SequencedRecord{{SeqNum: seq, Timestamp: 1, Body: []byte(body)}}}
	if err := sse.Batch(b, s2api.FormatBase64, seq, seq+1, 0); err != nil {
		t.Error(err)
	}
}

// TestFollowingReadResumesAfterTheDaemonEndsIt: a following read whose session ends (EOF, or
// a 503 error event from a daemon shutting down) opens a new one after the last record it
// got, and prints nothing twice.
func TestFollowingReadResumesAfterTheDaemonEndsIt(t *testing.T) {
	b, calls := sseDaemon(t,
		func(w http.ResponseWriter, r *http.Request, sse *s2api.SSEWriter) {
			if q := r.URL.Query(); q.Get("seq_num") != "0" || q.Has("wait") {
				t.Errorf("first session's query %v, want seq_num=0 and no wait", q)
			}
			sendRecord(t, sse, 0, "a")
		},
		func(w http.ResponseWriter, r *http.Request, sse *s2api.SSEWriter) {
			if q := r.URL.Query(); q.Get("seq_num") != "1" || q.Get("clamp") != "true" {
				t.Errorf("resumed session's query %v, want seq_num=1&clamp=true", q)
			}
			_ = sse.Error(&s2api.Error{Code: s2api.CodeUnavailable, Message: "server is shutting down"})
		},
		func(w http.ResponseWriter, r *http.Request, sse *s2api.SSEWriter) {
			if q := r.URL.Query(); q.Get("seq_num") != "1" {
				t.Errorf("second resumed session's query %v, want seq_num=1", q)
			}
			sendRecord(t, sse, 1, "b")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		},
	)
	s, err := b.openRead(t.Context(), "s", consumer.ReadRequest{Start: consumer.AtSeqNum(0), Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for want := range []string{"a", "b"} {
		recs, err := s.next(t.Context())
		if err != nil || len(recs) != 1 || recs[0].SeqNum != uint64(want) {
			t.Fatalf("record %d: %+v, %v", want, recs, err)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d sessions, want 3", n)
	}
}

// TestReadThroughDaemonEndsAtTheTailOrOnARefusal: a read without --follow asks for wait=0 and
// ends with the session; a refusal in the session (403) is not resumed but named.
func TestReadThroughDaemonEndsAtTheTailOrOnARefusal(t *testing.T) {
	b, _ := sseDaemon(t, func(w http.ResponseWriter, r *http.Request, sse *s2api.SSEWriter) {
		if r.URL.Query().Get("wait") != "0" {
			t.Errorf("query %v, want wait=0", r.URL.Query())
		}
		sendRecord(t, sse, 0, "a")
	})
	s, err := b.openRead(t.Context(), "s", consumer.ReadRequest{Start: consumer.AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := s.next(t.Context()); err != nil || len(recs) != 1 {
		t.Fatalf("first next: %+v, %v", recs, err)
	}
	if _, err := s.next(t.Context()); !errors.Is(err, consumer.ErrDone) {
		t.Fatalf("next at the end: %v, want ErrDone", err)
	}
	s.close()

	b, calls := sseDaemon(t, func(w http.ResponseWriter, r *http.Request, sse *s2api.SSEWriter) {
		_ = sse.Error(&s2api.Error{Code: s2api.CodePermissionDenied, Message: "revoked scope"})
	})
	s, err = b.openRead(t.Context(), "s", consumer.ReadRequest{Start: consumer.AtSeqNum(0), Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	_, err = s.next(t.Context())
	if err == nil || !strings.Contains(err.Error(), "403 permission_denied: revoked scope") || calls.Load() != 1 {
		t.Fatalf("next after a refusal: %v after %d sessions, want the 403 named and no resumption", err, calls.Load())
	}
}
