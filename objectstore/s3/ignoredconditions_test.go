package s3_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

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
