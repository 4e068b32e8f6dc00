package s3_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// bucketServer mimics a server that creates a missing bucket on a put (SeaweedFS by
// default) and tests an If-Match condition before the bucket: HeadBucket answers
// headBucket, a put 200 (or 404 NoSuchKey with If-Match while the bucket is missing), a
// HEAD of an object 404. It counts HeadBuckets and puts.
type bucketServer struct {
	headBucket  atomic.Int64 // the status HeadBucket answers
	heads, puts atomic.Int64
}

func (b *bucketServer) store(t *testing.T) *s3.Store {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.Method == http.MethodHead && strings.Trim(r.URL.Path, "/") == "bucket":
			b.heads.Add(1)
			w.WriteHeader(int(b.headBucket.Load()))
		case r.Method == http.MethodHead:
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodPut:
			b.puts.Add(1)
			if r.Header.Get("If-Match") != "" && b.headBucket.Load() == http.StatusNotFound {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>fake</Message></Error>`)
				return
			}
			w.Header().Set("ETag", `"e"`)
		default:
			w.WriteHeader(http.StatusNotImplemented)
		}
	}))
	t.Cleanup(srv.Close)
	return readTimeoutStore(t, srv.URL, 0, nil)
}

// A put to a missing bucket on a server that would create it fails with ErrNoBucket and
// sends no put; once the bucket is there, puts go ahead and the bucket is not asked about
// again (one HeadBucket after the bucket was found).
func TestS3PutChecksTheBucketFirst(t *testing.T) {
	var b bucketServer
	b.headBucket.Store(http.StatusNotFound)
	s := b.store(t)
	ctx := context.Background()
	for range 2 {
		_, err := objectstore.PutBytes(ctx, s, "k", []byte("x"), objectstore.PutCondition{})
		if !errors.Is(err, objectstore.ErrNoBucket) || objectstore.ErrorClass(err) != "no_bucket" {
			t.Fatalf("put to a missing bucket: %v (class %s), want ErrNoBucket", err, objectstore.ErrorClass(err))
		}
	}
	if b.puts.Load() != 0 || b.heads.Load() != 2 {
		t.Fatalf("%d puts and %d HeadBuckets reached the server, want 0 and 2 (a missing bucket is asked about again)", b.puts.Load(), b.heads.Load())
	}
	b.headBucket.Store(http.StatusOK) // the bucket is created
	b.putsGoThrough(t, s, 3, 3, 3)
}

// putsGoThrough makes n puts, which must succeed, and checks the counts of puts and
// HeadBuckets the server has seen since it started.
func (b *bucketServer) putsGoThrough(t *testing.T, s *s3.Store, n int, puts, heads int64) {
	t.Helper()
	for range n {
		if _, err := objectstore.PutBytes(context.Background(), s, "k", []byte("x"), objectstore.PutCondition{}); err != nil {
			t.Fatal(err)
		}
	}
	if b.puts.Load() != puts || b.heads.Load() != heads {
		t.Fatalf("%d puts and %d HeadBuckets, want %d and %d", b.puts.Load(), b.heads.Load(), puts, heads)
	}
}

// Credentials that may not look at the bucket (HeadBucket 403) do not stop puts: the bucket
// check gives way, once.
func TestS3BucketCheckForbiddenGivesWay(t *testing.T) {
	var b bucketServer
	b.headBucket.Store(http.StatusForbidden)
	b.putsGoThrough(t, b.store(t), 2, 2, 1)
}

// An If-Match put answered 404 NoSuchKey because the bucket has gone (a server that tests
// the condition before the bucket) fails with ErrNoBucket, not as a conflict.
func TestS3IfMatchOnAVanishedBucket(t *testing.T) {
	var b bucketServer
	b.headBucket.Store(http.StatusOK)
	s := b.store(t)
	ctx := context.Background()
	if _, err := objectstore.PutBytes(ctx, s, "k", []byte("x"), objectstore.PutCondition{}); err != nil {
		t.Fatal(err)
	}
	b.headBucket.Store(http.StatusNotFound) // the bucket is deleted
	_, err := objectstore.PutBytes(ctx, s, "k", []byte("y"), objectstore.IfMatch(`"e"`))
	if !errors.Is(err, objectstore.ErrNoBucket) || errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("If-Match put after the bucket went: %v, want ErrNoBucket alone", err)
	}
}

// A server that does not answer the bucket check fails the put within one read timeout,
// without sending it (so its outcome is not in doubt), and the next put asks again; a 5xx
// answer lets the put go ahead and the next put asks again.
func TestS3BucketCheckUnansweredOr5xx(t *testing.T) {
	var heads, puts atomic.Int64
	var headStatus atomic.Int64 // 0: no answer
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.Method == http.MethodHead && strings.Trim(r.URL.Path, "/") == "bucket":
			heads.Add(1)
			st := int(headStatus.Load())
			if st == 0 {
				select {
				case <-hung:
				case <-r.Context().Done():
				}
				return
			}
			w.WriteHeader(st)
		case r.Method == http.MethodPut:
			puts.Add(1)
			w.Header().Set("ETag", `"e"`)
		}
	}))
	t.Cleanup(func() { close(hung); srv.Close() })
	s := readTimeoutStore(t, srv.URL, 200*time.Millisecond, nil)
	ctx := context.Background()
	for i := range 2 {
		start := time.Now()
		_, err := objectstore.PutBytes(ctx, s, "k", []byte("x"), objectstore.PutCondition{})
		if err == nil || errors.Is(err, objectstore.ErrOutcomeUnknown) {
			t.Fatalf("put %d after an unanswered bucket check: %v, want a plain error", i, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("put %d took %v to fail (read timeout 200 ms): the check is retried", i, d)
		}
	}
	if heads.Load() != 2 || puts.Load() != 0 {
		t.Fatalf("%d HeadBuckets and %d puts, want 2 (one per put, no retries) and 0", heads.Load(), puts.Load())
	}
	headStatus.Store(http.StatusServiceUnavailable)
	for range 2 {
		if _, err := objectstore.PutBytes(ctx, s, "k", []byte("x"), objectstore.PutCondition{}); err != nil {
			t.Fatal(err)
		}
	}
	if heads.Load() != 4 || puts.Load() != 2 {
		t.Fatalf("after 5xx answers: %d HeadBuckets and %d puts, want 4 and 2", heads.Load(), puts.Load())
	}
}

// ignoringS3 imitates an S3-compatible server that does not implement conditional PutObject
// and silently ignores If-None-Match and If-Match (as AWS S3 itself did before August 2024, and
// older MinIO, Garage and SeaweedFS releases do): every PUT overwrites.
func ignoringS3(t *testing.T) *s3.Store {
	var mu sync.Mutex
	objs := map[string][]byte{}
	s, _ := fakeS3Checking(t, func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/bucket/")
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			objs[key] = b
			sum := md5.Sum(b)
			w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		case http.MethodGet, http.MethodHead:
			b, ok := objs[key]
			if !ok {
				s3Error(404, "NoSuchKey")(w, r)
				return
			}
			sum := md5.Sum(b)
			w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
			w.Write(b)
		case http.MethodDelete:
			delete(objs, key)
			w.WriteHeader(http.StatusNoContent)
		}
	})
	return s
}

// A store on such a server must not report a create-only or compare-and-swap put as done when
// the condition was never evaluated: the manifest protocol's single-writer guarantee rests on it.
func TestS3ServerIgnoringConditionsIsNotSilent(t *testing.T) {
	ctx := context.Background()
	s := ignoringS3(t)
	if _, err := objectstore.PutBytes(ctx, s, "manifest", []byte("writer A"), objectstore.IfAbsent()); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
		t.Errorf("create-only put on a server that ignores conditions: %v, want ErrConditionsUnsupported", err)
	}
	if _, err := objectstore.PutBytes(ctx, s, "manifest", []byte("writer A"), objectstore.IfAbsent()); err == nil {
		if _, err := objectstore.PutBytes(ctx, s, "manifest", []byte("writer B"), objectstore.IfAbsent()); err == nil {
			got, _, _ := objectstore.ReadAll(ctx, s, "manifest")
			t.Errorf("second create-only put of an existing key succeeded (object now %q): the server ignored If-None-Match and the store wrote unconditionally without noticing", got)
		}
	}
	if _, err := objectstore.PutBytes(ctx, s, "manifest2", []byte("v1"), objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	_, err := objectstore.PutBytes(ctx, s, "manifest2", []byte("v2"), objectstore.IfMatch(`"00000000000000000000000000000000"`))
	if err == nil {
		t.Errorf("compare-and-swap put against a stale version succeeded: the server ignored If-Match and the store wrote unconditionally without noticing")
	}
	// Every later refusal names its own key, and the server (not the first put's key, and
	// not only the bucket).
	var oe *objectstore.OpError
	if !errors.As(err, &oe) || oe.Key != "manifest2" || !strings.Contains(err.Error(), "the server at http://127.0.0.1:") || !strings.Contains(err.Error(), "(bucket bucket) ignores If-None-Match") {
		t.Errorf("a later conditional put's error: %v, want one naming key manifest2 and the server", err)
	}
}
