package s3_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// TestS3Conformance runs the suite against the server in SLUICE_TEST_S3_URL (scripts/test.sh
// starts versitygw and sets it).
func TestS3Conformance(t *testing.T) {
	storetest.RunWith(t, storetest.Options{ContentVersions: true}, func(t *testing.T) objectstore.Store {
		return storetest.S3(t)
	})
}

// TestS3NoBucket: on the real server, every operation on a bucket that does not exist
// reports ErrNoBucket (class no_bucket), never ErrNotFound: a missing bucket must not read
// as a missing object, nor a Delete of one as done. Head alone cannot tell (a HEAD's 404 has
// no body), as ErrNoBucket's doc says.
func TestS3NoBucket(t *testing.T) {
	_, loc := storetest.S3URL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	loc.Bucket = "no-such-bucket-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, trust := range []bool{false, true} {
		cfg := loc.S3Config()
		cfg.TrustConditionalWrites = trust
		st, err := s3.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ops := storeOps(ctx, st) // Head cannot tell: checked below
		delete(ops, "head")
		for name, op := range ops {
			err := op()
			if !errors.Is(err, objectstore.ErrNoBucket) || errors.Is(err, objectstore.ErrNotFound) || errors.Is(err, objectstore.ErrPreconditionFailed) {
				t.Errorf("trust %v: %s on a missing bucket: %v, want ErrNoBucket alone", trust, name, err)
			}
			if c := objectstore.ErrorClass(err); c != "no_bucket" {
				t.Errorf("trust %v: %s: class %q, want no_bucket", trust, name, c)
			}
		}
		if _, err := st.Head(ctx, "k"); !errors.Is(err, objectstore.ErrNotFound) && !errors.Is(err, objectstore.ErrNoBucket) {
			t.Errorf("trust %v: head on a missing bucket: %v, want ErrNotFound or ErrNoBucket", trust, err)
		}
	}
}

// TestS3AccessDenied: on the real server, refused credentials (a wrong secret: 403
// SignatureDoesNotMatch) give ErrAccessDenied (class access_denied) for every operation, so
// that callers fail at once instead of retrying, and say why.
func TestS3AccessDenied(t *testing.T) {
	_, loc := storetest.S3URL(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, err := s3.New(ctx, loc.S3Config())
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	st, err := objectstore.WithPrefix(base, strings.TrimPrefix(loc.Prefix+"/access-denied", "/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, st, "k", []byte("x"), objectstore.PutCondition{}); err == nil {
		st.Delete(ctx, "k")
		t.Fatal("the server accepted a put signed with a wrong secret: it does not check signatures")
	}
	for name, op := range storeOps(ctx, st) {
		err := op()
		if !errors.Is(err, objectstore.ErrAccessDenied) || errors.Is(err, objectstore.ErrOutcomeUnknown) {
			t.Errorf("%s with a wrong secret: %v, want ErrAccessDenied", name, err)
		}
		if c := objectstore.ErrorClass(err); c != "access_denied" {
			t.Errorf("%s: class %q, want access_denied", name, c)
		}
	}
}

// storeOps returns one call of each operation on key "k" of st, by name.
func storeOps(ctx context.Context, st objectstore.Store) map[string]func() error {
	put := func(cond objectstore.PutCondition) func() error {
		return func() error {
			_, err := objectstore.PutBytes(ctx, st, "k", []byte("x"), cond)
			return err
		}
	}
	return map[string]func() error{
		"get":           func() error { _, err := st.Get(ctx, "k", objectstore.GetOptions{}); return err },
		"head":          func() error { _, err := st.Head(ctx, "k"); return err },
		"list":          func() error { _, err := st.List(ctx, "", "", 0); return err },
		"delete":        func() error { return st.Delete(ctx, "k") },
		"put":           put(objectstore.Unconditional()),
		"put if absent": put(objectstore.IfAbsent()),
		"put if match":  put(objectstore.IfMatch(`"v"`)),
	}
}
