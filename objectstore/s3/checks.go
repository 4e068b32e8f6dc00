package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice-dev/sluice/objectstore"
)

// checkBucket makes sure, before the store's first put, that the bucket exists: some
// S3-compatible servers (SeaweedFS by default) create a missing bucket on a put, so a
// misspelt bucket would silently become a new one. It asks once (one attempt, no retries),
// until an answer settles it:
//   - 404: the put fails with ErrNoBucket, and the next put asks again;
//   - 2xx, 3xx or 4xx (a 403 only says that the credentials may not look: the puts will
//     tell): every put goes ahead without asking again;
//   - 5xx: this put goes ahead, and the next asks again;
//   - no answer: the put fails, not sent (as a put to that server would, but without its
//     outcome in doubt), and the next asks again.
func (s *Store) checkBucket(ctx context.Context, key string) error {
	if s.bucketOK.Load() {
		return nil
	}
	_, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &s.bucket}, func(o *awss3.Options) { o.RetryMaxAttempts = 1 })
	switch st := status(err); {
	case err == nil:
		s.bucketOK.Store(true)
	case st == http.StatusNotFound:
		return objectstore.NewOpError("put", key, objectstore.ErrNoBucket, fmt.Errorf("bucket %q does not exist (HeadBucket before the first put: %w)", s.bucket, err))
	case st >= 500:
	case st != 0:
		s.bucketOK.Store(true)
	default:
		return objectstore.NewOpError("put", key, nil, fmt.Errorf("not sent: the HeadBucket before the store's first put got no answer: %w", err))
	}
	return nil
}

// checkConditions makes sure, once per store, that the server honours conditional puts: some
// S3-compatible servers (and older versions of many) accept If-None-Match and If-Match and
// ignore them, which would turn the manifest's create-only and compare-and-swap writes into
// overwrites without a sign. Next to key (where the caller may write), it puts an object
// create-only twice and then with a version it cannot have, expects both of the later puts to
// be refused, and deletes the object. A server found to ignore a condition fails every
// conditional put with ErrConditionsUnsupported; a check that cannot finish (the store
// unreachable) fails this put only, and is made again with the next.
func (s *Store) checkConditions(ctx context.Context, key string) error {
	s.condMu.Lock()
	defer s.condMu.Unlock()
	unsupported := func(cause error) error {
		return objectstore.NewOpError("put", key, objectstore.ErrConditionsUnsupported, cause)
	}
	if s.condCause != nil {
		return unsupported(s.condCause)
	}
	if s.condOK {
		return nil
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	probe := key + ".sluice-condcheck." + hex.EncodeToString(r[:])
	defer func() {
		if _, err := s.client.DeleteObject(context.WithoutCancel(ctx), &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &probe}); err != nil && status(err) != http.StatusNotFound {
			s.logger.Warn("objectstore: s3: conditional-write check: deleting its object failed", "key", probe, "err", err)
		}
	}()
	put := func(cond objectstore.PutCondition) error {
		_, err := s.put(ctx, probe, strings.NewReader("x"), 1, cond)
		return err
	}
	checking := func(err error) error {
		return fmt.Errorf("objectstore: s3: checking that the server honours conditional writes: %w", err)
	}
	if err := put(objectstore.PutCondition{IfAbsent: true}); err != nil {
		if errors.Is(err, objectstore.ErrConditionsUnsupported) {
			s.condCause = opCause(err)
			return unsupported(s.condCause)
		}
		return checking(err)
	}
	for _, c := range []struct {
		cond objectstore.PutCondition
		what string
	}{
		{objectstore.PutCondition{IfAbsent: true}, "If-None-Match: * (a create-only put of an existing object succeeded)"},
		{objectstore.PutCondition{IfMatch: `"sluice-condcheck-no-such-version"`}, "If-Match (a put on a version the object never had succeeded)"},
	} {
		switch err := put(c.cond); {
		case err == nil:
			s.condCause = fmt.Errorf("the server at %s (bucket %s) ignores %s", s.server, s.bucket, c.what)
			s.logger.Error("objectstore: s3: the server ignores conditional writes; refusing them", "server", s.server, "bucket", s.bucket, "ignored", c.what)
			return unsupported(s.condCause)
		case errors.Is(err, objectstore.ErrPreconditionFailed):
		case errors.Is(err, objectstore.ErrConditionsUnsupported):
			s.condCause = opCause(err)
			return unsupported(s.condCause)
		default:
			return checking(err)
		}
	}
	s.condOK = true
	return nil
}
