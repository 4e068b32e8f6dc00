package objectstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// A server that stops answering (it reads the request, then sends nothing) fails requests
// once ReadTimeout passes without a byte: a put with ErrOutcomeUnknown (the server has the
// request and may apply it), a get with an error, after the SDK's retries. Without it they
// would wait for ever; a context is not needed to end them.
func TestS3ReadTimeoutHungServer(t *testing.T) {
	hung := make(chan struct{})
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hung); srv.Close() })
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := objectstore.NewS3Store(context.Background(), objectstore.S3Config{
		Bucket: "bucket", Region: "us-east-1", Endpoint: srv.URL, PathStyle: true, TrustConditionalWrites: true,
		ReadTimeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	done := make(chan error, 2)
	go func() {
		_, err := objectstore.PutBytes(context.Background(), s, "k", []byte("body"), objectstore.IfAbsent())
		done <- err
	}()
	go func() {
		_, _, err := objectstore.ReadAll(context.Background(), s, "k")
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a request to a server that never answers succeeded")
			}
			t.Logf("%v", err)
			var oe *objectstore.OpError
			if !errors.As(err, &oe) {
				t.Errorf("%v: not an *objectstore.OpError", err)
			}
			if oe != nil && oe.Op == "put" && !errors.Is(err, objectstore.ErrOutcomeUnknown) {
				t.Errorf("put to a hung server: %v, want ErrOutcomeUnknown", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a request to a hung server still waits after 30 s (read timeout 200 ms)")
		}
	}
	if n.Load() < 2 {
		t.Errorf("%d requests reached the server, want at least 2", n.Load())
	}
}

func TestS3ReadTimeoutValidation(t *testing.T) {
	_, err := objectstore.NewS3Store(context.Background(), objectstore.S3Config{Bucket: "bucket", Region: "us-east-1", ReadTimeout: -time.Second})
	if err == nil {
		t.Fatal("a negative read timeout was accepted")
	}
	loc, err := objectstore.ParseURL("s3://bucket/p?region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.S3Config().ReadTimeout; got != objectstore.DefaultS3ReadTimeout {
		t.Errorf("a store URL's read timeout is %v, want DefaultS3ReadTimeout", got)
	}
}

// A get whose body arrives slowly but steadily, for longer than ReadTimeout in all, is not
// cut: the bound is on silence, not on the whole transfer.
func TestS3ReadTimeoutSlowBodyGoesThrough(t *testing.T) {
	const chunks = 30
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", "300")
		w.WriteHeader(http.StatusOK)
		for range chunks {
			w.Write([]byte("0123456789"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := objectstore.NewS3Store(context.Background(), objectstore.S3Config{
		Bucket: "bucket", Region: "us-east-1", Endpoint: srv.URL, PathStyle: true, TrustConditionalWrites: true,
		ReadTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	data, _, err := objectstore.ReadAll(context.Background(), s, "k")
	if err != nil || len(data) != 10*chunks {
		t.Fatalf("slow but steady get (%d ms in all, read timeout 1 s): %d bytes, %v", chunks*50, len(data), err)
	}
}
