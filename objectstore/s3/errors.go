package s3

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/internal/sized"
)

// status returns the HTTP status of an SDK error, or 0 when there was no response.
func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// notSent reports whether err shows that the request never reached the server.
func notSent(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr)
}

// sentTrace returns ctx with a trace that records whether a request's headers were written:
// until they are, a failure (a TLS handshake refused, an https endpoint that speaks http)
// cannot have reached the server.
func sentTrace(ctx context.Context) (context.Context, *atomic.Bool) {
	var wrote atomic.Bool
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}), &wrote
}

// readErr classifies errors of idempotent operations.
func (s *Store) readErr(op, key string, err error) error {
	switch st := status(err); {
	case apiCode(err) == "NoSuchBucket":
		return objectstore.NewOpError(op, key, objectstore.ErrNoBucket, err)
	case st == http.StatusForbidden:
		return objectstore.NewOpError(op, key, objectstore.ErrAccessDenied, err)
	case st == http.StatusNotFound && op != "list":
		return objectstore.NewOpError(op, key, objectstore.ErrNotFound, err)
	case st == http.StatusNotModified:
		return objectstore.NewOpError(op, key, objectstore.ErrNotModified, err)
	}
	return objectstore.NewOpError(op, key, nil, err)
}

// putErr classifies PutObject errors; body is the request body reader, and wrote tells
// whether the request's headers were written.
func (s *Store) putErr(key string, cond objectstore.PutCondition, body *sized.Reader, wrote bool, err error) error {
	if body.Err() != nil {
		// The body failed before it was complete: the server cannot have stored the object.
		return objectstore.NewOpError("put", key, nil, body.Err())
	}
	st := status(err)
	switch {
	case apiCode(err) == "NoSuchBucket":
		return objectstore.NewOpError("put", key, objectstore.ErrNoBucket, err)
	case st == http.StatusForbidden:
		return objectstore.NewOpError("put", key, objectstore.ErrAccessDenied, err)
	case cond != (objectstore.PutCondition{}) && (st == http.StatusNotImplemented || apiCode(err) == "NotImplemented"):
		// A definite refusal ("a header you provided implies functionality that is not
		// implemented"): nothing was stored, and no conditional put will work here.
		return objectstore.NewOpError("put", key, objectstore.ErrConditionsUnsupported, err)
	case st == http.StatusPreconditionFailed:
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case st == http.StatusConflict && apiCode(err) == "ConditionalRequestConflict":
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case st == http.StatusNotFound && cond.IfMatch != "" && (apiCode(err) == "NoSuchKey" || apiCode(err) == "NotFound"):
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case st == http.StatusServiceUnavailable && apiCode(err) == "SlowDown":
		// S3 refuses a request for its rate before acting on it: nothing was stored, and
		// the same put may succeed after a pause. Not a lost race, not an unknown outcome.
		return objectstore.NewOpError("put", key, objectstore.ErrThrottled, err)
	case st >= 500:
		s.logger.Debug("objectstore: s3: put outcome unknown", "bucket", s.bucket, "key", key, "status", st, "err", err)
		return objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, err)
	case st != 0:
		return objectstore.NewOpError("put", key, nil, err)
	case notSent(err) || !wrote:
		return objectstore.NewOpError("put", key, nil, err)
	}
	// No response: the request may have been applied.
	s.logger.Debug("objectstore: s3: put outcome unknown", "bucket", s.bucket, "key", key, "err", err)
	return objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, err)
}

// opCause is what the backend reported behind err, an *OpError, or err itself.
func opCause(err error) error {
	var oe *objectstore.OpError
	if errors.As(err, &oe) && oe.Cause != nil {
		return oe.Cause
	}
	return err
}
