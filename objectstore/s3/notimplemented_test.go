package s3_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// A server that does not implement conditional PutObject and says so answers 501
// NotImplemented ("A header you provided implies functionality that is not implemented"),
// without storing anything. That is a definite, permanent refusal: it must be a plain error
// that names the cause, not ErrOutcomeUnknown (which sends the manifest layer into read-back
// resolution and LoadOrCreate into 20 retries), and never ErrPreconditionFailed.
func TestS3ConditionalPutNotImplemented(t *testing.T) {
	ctx := context.Background()
	for _, cond := range []objectstore.PutCondition{objectstore.IfAbsent(), objectstore.IfMatch(`"v"`)} {
		s, n := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if r.Header.Get("If-None-Match") == "" && r.Header.Get("If-Match") == "" {
				w.Header().Set("ETag", `"e"`)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message><Header>If-None-Match</Header></Error>`)
		})
		_, err := objectstore.PutBytes(ctx, s, "k", []byte("body"), cond)
		if err == nil {
			t.Fatalf("%+v: put succeeded", cond)
		}
		if errors.Is(err, objectstore.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrPreconditionFailed) {
			t.Errorf("%+v: put answered 501 NotImplemented: %v\nwant a plain error (the server refused the conditional write; nothing was stored), not outcome-unknown or precondition-failed", cond, err)
		}
		if !errors.Is(err, objectstore.ErrConditionsUnsupported) || !strings.Contains(err.Error(), "NotImplemented") {
			t.Errorf("%+v: error %v does not name the server's refusal", cond, err)
		}
		if n.Load() != 1 {
			t.Errorf("%+v: %d requests, want 1", cond, n.Load())
		}
		// The refusal is for good: the next conditional put fails without a request, naming
		// its own key.
		_, err = objectstore.PutBytes(ctx, s, "k2", []byte("body"), cond)
		var oe *objectstore.OpError
		if !errors.Is(err, objectstore.ErrConditionsUnsupported) || !errors.As(err, &oe) || oe.Key != "k2" || n.Load() != 1 {
			t.Errorf("%+v: the next conditional put: %v after %d requests in all, want ErrConditionsUnsupported for k2 and no request", cond, err, n.Load())
		}
	}
}

// With the store's check on (the default), the check's own first put meets the refusal: the
// put fails with ErrConditionsUnsupported, and so does every later conditional put, without a
// request; unconditional puts still work.
func TestS3ConditionalPutNotImplementedChecked(t *testing.T) {
	ctx := context.Background()
	s, n := fakeS3Checking(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("If-None-Match") == "" && r.Header.Get("If-Match") == "" {
			w.Header().Set("ETag", `"e"`)
			return
		}
		s3Error(http.StatusNotImplemented, "NotImplemented")(w, r)
	})
	for i := 0; i < 2; i++ {
		if _, err := objectstore.PutBytes(ctx, s, "k", []byte("body"), objectstore.IfAbsent()); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Fatalf("conditional put %d on a server without conditional writes: %v", i, err)
		}
	}
	before := n.Load()
	if _, err := objectstore.PutBytes(ctx, s, "k", []byte("body"), objectstore.IfMatch(`"v"`)); !errors.Is(err, objectstore.ErrConditionsUnsupported) || n.Load() != before {
		t.Fatalf("a later conditional put: %v after %d more requests, want ErrConditionsUnsupported at once", err, n.Load()-before)
	}
	if _, err := objectstore.PutBytes(ctx, s, "k", []byte("body"), objectstore.Unconditional()); err != nil {
		t.Fatalf("unconditional put: %v", err)
	}
}
