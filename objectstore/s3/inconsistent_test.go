package s3_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// MinIO with several drives, after a conditional put was cut off, can answer an If-Match put
// with 404 NoSuchKey while HEAD and GET serve the very version it names. Taken for a
// conflict, that sent the manifest's writers round reload-and-retry without end and without
// a word; it is ErrInconsistent. A 404 for an object that is really gone (HEAD 404, or
// another version) stays a conflict.
func TestS3IfMatchNotFoundWhileServed(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		headETag string // "" for HEAD 404
		want     error
	}{
		{"served at that version", `"v1"`, objectstore.ErrInconsistent},
		{"served at another version", `"v2"`, objectstore.ErrPreconditionFailed},
		{"gone", "", objectstore.ErrPreconditionFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodHead && c.headETag != "":
					w.Header().Set("ETag", c.headETag)
					w.Header().Set("Content-Length", "4")
				case r.Method == http.MethodHead:
					w.WriteHeader(http.StatusNotFound)
				case r.Method == http.MethodPut && r.Header.Get("If-Match") != "":
					s3Error(http.StatusNotFound, "NoSuchKey")(w, r)
				default:
					io.Copy(io.Discard, r.Body)
					w.WriteHeader(http.StatusBadRequest)
				}
			})
			_, err := objectstore.PutBytes(ctx, s, "m", []byte("next"), objectstore.IfMatch(`"v1"`))
			if !errors.Is(err, c.want) {
				t.Fatalf("put: %v, want %v", err, c.want)
			}
			if c.want == objectstore.ErrInconsistent && errors.Is(err, objectstore.ErrPreconditionFailed) {
				t.Fatalf("put: %v also matches ErrPreconditionFailed (a conflict, retried)", err)
			}
		})
	}
}
