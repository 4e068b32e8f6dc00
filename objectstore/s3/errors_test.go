package s3_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// fakeS3 answers every request with handler and counts requests, except a HeadBucket,
// which it answers 200 (the bucket exists) and leaves out of the count. The store trusts
// the fake with conditional puts (it does not check them first; fakeS3Checking does).
func fakeS3(t *testing.T, handler http.HandlerFunc) (*s3.Store, *atomic.Int64) {
	t.Helper()
	return fakeS3Config(t, true, handler)
}

// fakeS3Checking is fakeS3 with the store's check of conditional writes on, as by default.
func fakeS3Checking(t *testing.T, handler http.HandlerFunc) (*s3.Store, *atomic.Int64) {
	t.Helper()
	return fakeS3Config(t, false, handler)
}

func fakeS3Config(t *testing.T, trust bool, handler http.HandlerFunc) (*s3.Store, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && strings.Trim(r.URL.Path, "/") == "bucket" {
			return // HeadBucket, before the store's first put: the bucket is there
		}
		n.Add(1)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := s3.New(context.Background(), s3.Config{
		Bucket: "bucket", Region: "us-east-1", Endpoint: srv.URL, PathStyle: true, TrustConditionalWrites: trust,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &n
}

func s3Error(status int, code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>fake</Message></Error>`)
	}
}

func TestS3ErrorMapping(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		h      http.HandlerFunc
		cond   objectstore.PutCondition
		want   error // nil: a plain error, matching no sentinel
		nCalls int64
	}{
		{"412", s3Error(412, "PreconditionFailed"), objectstore.IfMatch(`"v"`), objectstore.ErrPreconditionFailed, 1},
		{"409 ConditionalRequestConflict", s3Error(409, "ConditionalRequestConflict"), objectstore.IfAbsent(), objectstore.ErrPreconditionFailed, 1},
		// The put, then a HEAD (TestS3IfMatchNotFoundWhileServed), which finds no object.
		{"404 NoSuchKey on if-match", s3Error(404, "NoSuchKey"), objectstore.IfMatch(`"v"`), objectstore.ErrPreconditionFailed, 2},
		{"404 NoSuchBucket unconditional", s3Error(404, "NoSuchBucket"), objectstore.Unconditional(), objectstore.ErrNoBucket, 1},
		{"403", s3Error(403, "AccessDenied"), objectstore.IfAbsent(), objectstore.ErrAccessDenied, 1},
		{"500 is not retried and is unknown", s3Error(500, "InternalError"), objectstore.IfMatch(`"v"`), objectstore.ErrOutcomeUnknown, 1},
		{"503 SlowDown is not retried and is throttling", s3Error(503, "SlowDown"), objectstore.IfMatch(`"v"`), objectstore.ErrThrottled, 1},
		{"503 of another kind is not retried and is unknown", s3Error(503, "ServiceUnavailable"), objectstore.Unconditional(), objectstore.ErrOutcomeUnknown, 1},
		{"connection dropped after the body", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, objectstore.IfAbsent(), objectstore.ErrOutcomeUnknown, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, n := fakeS3(t, c.h)
			_, err := objectstore.PutBytes(ctx, s, "k", []byte("body"), c.cond)
			if err == nil {
				t.Fatal("put succeeded")
			}
			for _, sentinel := range []error{objectstore.ErrPreconditionFailed, objectstore.ErrOutcomeUnknown, objectstore.ErrNotFound, objectstore.ErrAccessDenied, objectstore.ErrNoBucket, objectstore.ErrThrottled} {
				if errors.Is(err, sentinel) != (sentinel == c.want) {
					t.Fatalf("put: %v; errors.Is(%v) = %v", err, sentinel, errors.Is(err, sentinel))
				}
			}
			var op *objectstore.OpError
			if !errors.As(err, &op) || op.Cause == nil {
				t.Fatalf("put: %v: want an *OpError keeping the server's error as cause", err)
			}
			if got := n.Load(); got != c.nCalls {
				t.Fatalf("put sent %d requests, want %d (puts must not be retried)", got, c.nCalls)
			}
		})
	}
}

func TestS3ReadErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s3Error(404, "NoSuchKey")(w, r)
	})
	if _, err := s.Get(ctx, "k", objectstore.GetOptions{}); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get: %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "k", objectstore.GetOptions{IfNoneMatch: `"v"`}); !errors.Is(err, objectstore.ErrNotModified) {
		t.Fatalf("get if-none-match: %v, want ErrNotModified", err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
}

func TestS3PutBeforeSendIsPlain(t *testing.T) {
	// Nothing listens on the port: the request never left, so the error is a plain one.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s, err := s3.New(context.Background(), s3.Config{Bucket: "bucket", Region: "us-east-1", Endpoint: "http://" + addr, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = objectstore.PutBytes(context.Background(), s, "k", []byte("x"), objectstore.IfAbsent())
	if err == nil || errors.Is(err, objectstore.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("put to a closed port: %v, want a plain error", err)
	}
}

func TestS3PutStreamsWithoutPayloadHash(t *testing.T) {
	var gotHash, gotLen string
	var gotBody atomic.Int64
	s, _ := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		gotHash, gotLen = r.Header.Get("X-Amz-Content-Sha256"), r.Header.Get("Content-Length")
		n, _ := io.Copy(io.Discard, r.Body)
		gotBody.Store(n)
		w.Header().Set("ETag", `"e"`)
	})
	// A reader that is not a Seeker: the SDK cannot rewind it to hash it.
	body := io.MultiReader(strings.NewReader(strings.Repeat("x", 1<<20)))
	info, err := s.Put(context.Background(), "k", body, 1<<20, objectstore.Unconditional())
	if err != nil {
		t.Fatal(err)
	}
	if gotHash != "UNSIGNED-PAYLOAD" || gotLen != "1048576" || gotBody.Load() != 1<<20 || info.Version != `"e"` {
		t.Fatalf("sha256 header %q, content-length %q, body %d, version %q", gotHash, gotLen, gotBody.Load(), info.Version)
	}
}

func TestNewValidation(t *testing.T) {
	_, err := s3.New(context.Background(), s3.Config{Bucket: "", Endpoint: "ftp://x"})
	if err == nil || !strings.Contains(err.Error(), "missing bucket") || !strings.Contains(err.Error(), "scheme must be http or https") {
		t.Fatalf("want both problems reported, got %v", err)
	}
}

func TestS3PutTimeoutAfterSendIsUnknown(t *testing.T) {
	release := make(chan struct{})
	received := make(chan struct{}, 1)
	s, n := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		received <- struct{}{}
		select { // hold the answer until the client has given up
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-received // the whole request reached the server; now lose the answer
		cancel()
	}()
	_, err := objectstore.PutBytes(ctx, s, "k", []byte("body"), objectstore.IfMatch(`"v"`))
	if !errors.Is(err, objectstore.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("put whose answer never came: %v, want ErrOutcomeUnknown only", err)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d requests, want 1", got)
	}
}

// Self-hosted S3-compatible servers (MinIO, Ceph RGW, Garage, SeaweedFS, versitygw) are often
// run with a self-signed or private-CA certificate, or on plain http while the endpoint says
// https. The TLS handshake then fails before a byte of the request is written: the put
// certainly did not happen, so it is a plain error, not ErrOutcomeUnknown (the Store contract
// reserves that for "a timeout or a lost connection after the request was sent").
func TestS3PutTLSFailureIsNotSent(t *testing.T) {
	cases := []struct {
		name string
		srv  func(http.Handler) *httptest.Server
		url  func(*httptest.Server) string
	}{
		{"untrusted certificate", httptest.NewTLSServer, func(s *httptest.Server) string { return s.URL }},
		{"https endpoint on an http server", httptest.NewServer, func(s *httptest.Server) string { return "https://" + s.Listener.Addr().String() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var reached atomic.Int64
			srv := c.srv(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
			defer srv.Close()
			t.Setenv("AWS_ACCESS_KEY_ID", "test")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			s, err := s3.New(context.Background(), s3.Config{Bucket: "bucket", Region: "us-east-1", Endpoint: c.url(srv), PathStyle: true, TrustConditionalWrites: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = objectstore.PutBytes(context.Background(), s, "k", []byte("x"), objectstore.IfAbsent())
			if reached.Load() != 0 {
				t.Fatalf("request reached the handler")
			}
			if err == nil || errors.Is(err, objectstore.ErrOutcomeUnknown) {
				t.Fatalf("put that failed in the TLS handshake: %v\nwant a plain error (nothing was sent)", err)
			}
		})
	}
}

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
