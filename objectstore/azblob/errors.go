package azblob

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/sluice-dev/sluice/objectstore"
)

// status returns the HTTP status of an SDK error, or 0 when there was no answer.
func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func throttled(err error) bool {
	st := status(err)
	return st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable && bloberror.HasCode(err, bloberror.ServerBusy)
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

func (s *Store) readErr(op, key string, err error) error {
	st := status(err)
	switch {
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return objectstore.NewOpError(op, key, objectstore.ErrNoBucket, err)
	case st == http.StatusForbidden || st == http.StatusUnauthorized:
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

func (s *Store) putErr(key string, cond objectstore.PutCondition, wrote bool, err error) error {
	st := status(err)
	switch {
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return objectstore.NewOpError("put", key, objectstore.ErrNoBucket, err)
	case st == http.StatusForbidden || st == http.StatusUnauthorized:
		return objectstore.NewOpError("put", key, objectstore.ErrAccessDenied, err)
	case st == http.StatusPreconditionFailed:
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case st == http.StatusConflict && cond != (objectstore.PutCondition{}):
		// BlobAlreadyExists to If-None-Match: *, or a concurrent write holding the blob.
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case st == http.StatusNotFound && cond.IfMatch != "":
		return objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, err)
	case throttled(err):
		return objectstore.NewOpError("put", key, objectstore.ErrThrottled, err)
	case st >= 500:
		s.logger.Debug("objectstore: azblob: put outcome unknown", "container", s.container, "key", key, "status", st, "err", err)
		return objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, err)
	case st != 0:
		return objectstore.NewOpError("put", key, nil, err)
	case notSent(err) || !wrote:
		return objectstore.NewOpError("put", key, nil, err)
	}
	s.logger.Debug("objectstore: azblob: put outcome unknown", "container", s.container, "key", key, "err", err)
	return objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, err)
}
