package gcs

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/sluice-dev/sluice/objectstore"
)

// status returns the HTTP status of a client error, or 0 when there was no answer.
func status(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	switch {
	case errors.Is(err, storage.ErrObjectNotExist), errors.Is(err, storage.ErrBucketNotExist):
		return http.StatusNotFound
	}
	return 0
}

// reason returns the first error reason of a JSON API error ("rateLimitExceeded", "notFound").
func reason(err error) string {
	var ge *googleapi.Error
	if errors.As(err, &ge) && len(ge.Errors) > 0 {
		return ge.Errors[0].Reason
	}
	return ""
}

// noBucket reports whether err says the bucket does not exist. An object read's 404 says
// only "not found" (the client reports storage.ErrObjectNotExist either way); writes and
// listings name the bucket.
func noBucket(err error) bool {
	if errors.Is(err, storage.ErrBucketNotExist) {
		return true
	}
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusNotFound && strings.Contains(strings.ToLower(ge.Message), "bucket does not exist")
}

// throttled reports whether err is GCS's refusal for rate: 429 Too Many Requests.
func throttled(err error) bool {
	return status(err) == http.StatusTooManyRequests || reason(err) == "rateLimitExceeded"
}

func notSent(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr)
}

// sentTrace returns ctx with a trace that records whether a request's headers were written.
func sentTrace(ctx context.Context) (context.Context, *atomic.Bool) {
	var wrote atomic.Bool
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}), &wrote
}

// readErr classifies errors of idempotent operations.
func (s *Store) readErr(op, key string, err error) error {
	st := status(err)
	switch {
	case noBucket(err):
		return objectstore.NewOpError(op, key, objectstore.ErrNoBucket, err)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return objectstore.NewOpError(op, key, objectstore.ErrAccessDenied, err)
	case st == http.StatusNotFound && op != "list":
		return objectstore.NewOpError(op, key, objectstore.ErrNotFound, err)
	case st == http.StatusNotModified:
		return objectstore.NewOpError(op, key, objectstore.ErrNotModified, err)
	case throttled(err):
		return objectstore.NewOpError(op, key, objectstore.ErrThrottled, err)
	}
	return objectstore.NewOpError(op, key, nil, err)
}

// putErr classifies a failed put; wrote tells whether the request's headers were written.
func (s *Store) putErr(key string, cond objectstore.PutCondition, wrote bool, err error) error {
	st := status(err)
	switch {
	case noBucket(err):
		return objectstore.NewOpError("put", key, objectstore.ErrNoBucket, err)
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return objectstore.NewOpError("put", key, objectstore.ErrAccessDenied, err)
	case st == http.StatusPreconditionFailed:
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case st == http.StatusNotFound && cond.IfMatch != "":
		// No live object at all: the generation named is not the live one.
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case throttled(err):
		return objectstore.NewOpError("put", key, objectstore.ErrThrottled, err)
	case st >= 500:
		s.logger.Debug("objectstore: gcs: put outcome unknown", "bucket", s.bucket, "key", key, "status", st, "err", err)
		return objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, err)
	case st != 0:
		return objectstore.NewOpError("put", key, nil, err)
	case notSent(err) || !wrote:
		return objectstore.NewOpError("put", key, nil, err)
	}
	s.logger.Debug("objectstore: gcs: put outcome unknown", "bucket", s.bucket, "key", key, "err", err)
	return objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, err)
}
