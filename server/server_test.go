package server_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
)

func TestNewValidatesEveryOption(t *testing.T) {
	_, err := server.New(nil, server.WithBearerToken(""), server.WithMaxBodyBytes(10),
		server.WithHeartbeatInterval(20*time.Second), server.WithWriteTimeout(0), server.WithLogger(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"backend is nil", "token is empty", "below 1 MiB", "heartbeat interval", "write timeout", "logger is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
	if _, err := server.New(newEngineBackend(t)); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestErrorsFromBackendAreMapped(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{s2api.ErrUnavailable, 503, "unavailable"},
		{errors.Join(errors.New("disk"), s2api.ErrStorage), 500, "storage"},
		{s2api.Errorf(s2api.CodeTransactionConflict, "again"), 409, "transaction_conflict"},
		{errors.New("boom"), 500, "other"},
	} {
		srv, err := server.New(failing{err: c.err})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/streams/x/records/tail", nil)
		req.Header.Set("S2-Basin", "test-basin")
		srv.ServeHTTP(rec, req)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), `"code":"`+c.code+`"`) {
			t.Errorf("%v: %d %s", c.err, rec.Code, rec.Body.String())
		}
		_ = srv.Close()
	}
}

// failing is a Backend whose CheckTail fails with err; it is only asked for the tail.
type failing struct {
	server.Backend
	err error
}

func (f failing) CheckTail(context.Context, string, string) (s2api.StreamPosition, error) {
	return s2api.StreamPosition{}, f.err
}
