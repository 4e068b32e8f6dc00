package objectstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("objectstore: not found")
	// ErrPreconditionFailed: a create-only put found the key present, or an If-Match put found
	// another version (or no object at all).
	ErrPreconditionFailed = errors.New("objectstore: precondition failed")
	// ErrNotModified: a Get with IfNoneMatch found the object still at that version.
	ErrNotModified = errors.New("objectstore: not modified")
	// ErrOutcomeUnknown: a write may or may not have been applied.
	ErrOutcomeUnknown = errors.New("objectstore: outcome unknown")
	// ErrConditionsUnsupported: the store refuses conditional puts (If-None-Match,
	// If-Match), or was found to ignore them; nothing that needs them can work on it.
	ErrConditionsUnsupported = errors.New("objectstore: the store does not support conditional writes")
	// ErrInvalidKey: the key is not acceptable (see ValidateKey).
	ErrInvalidKey = errors.New("objectstore: invalid key")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("objectstore: store closed")
	// ErrCorrupt: the backend holds something that is not a well-formed object (for example a
	// file in a file store's directory without the object header). Never retried.
	ErrCorrupt = errors.New("objectstore: corrupt object")
	// ErrInconsistent: the store contradicts itself, as an S3 server does that refuses an
	// If-Match put for want of an object while it serves that very version (seen on MinIO
	// with several drives after a conditional put was cut off). Not a conflict, which the
	// manifest's writers retry without a word: a plain failure, which they log and count,
	// and retry in case the server repairs itself.
	ErrInconsistent = errors.New("objectstore: the store contradicts itself")
	// ErrNoBucket: the S3 bucket does not exist, or a file store's directory is gone. Not
	// ErrNotFound, so that a missing bucket is never taken for a missing object (a stream
	// that was never created, say). On S3 a HEAD cannot tell the two apart (its 404 has no
	// body), so Head, and a Get of an empty range (made with a HEAD), report ErrNotFound
	// either way; Get, Put, Delete and List report ErrNoBucket.
	ErrNoBucket = errors.New("objectstore: bucket does not exist")
	// ErrAccessDenied: the store refused the credentials or the operation (S3's 403:
	// AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch...). Nothing was applied.
	// Manifest loads return it at once. (A 403 for a skewed clock is normally absorbed by
	// the AWS SDK, which corrects its clock offset and retries reads.)
	ErrAccessDenied = errors.New("objectstore: access denied")
	// ErrThrottled: the store refused the request for its rate (S3's 503 SlowDown, GCS's and
	// Azure's 429, Azure's 503 ServerBusy): nothing was applied, and the same request may
	// succeed after a pause. A conditional put refused so is not a lost race: the writer
	// backs off and retries against the same version (see WriteLimiter).
	ErrThrottled = errors.New("objectstore: throttled")
)

// Refused reports whether err says the store refuses the request as such: the bucket does
// not exist (ErrNoBucket), the credentials were refused (ErrAccessDenied), or the server
// does not honour conditional writes (ErrConditionsUnsupported). A retry fails the same way
// until an operator creates the bucket, fixes the credentials or changes the server.
func Refused(err error) bool {
	return errors.Is(err, ErrNoBucket) || errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrConditionsUnsupported)
}

// OpError describes a failed store operation. Kind is one of the sentinels above (or nil for
// a plain failure); Cause is what the backend reported.
type OpError struct {
	Op    string // "get", "head", "put", "delete", "list"
	Key   string // key or prefix
	Kind  error  // sentinel, may be nil
	Cause error  // backend error, may be nil
}

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString("objectstore: ")
	b.WriteString(e.Op)
	b.WriteString(" ")
	b.WriteString(fmt.Sprintf("%q", e.Key))
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Kind.Error(), "objectstore: "))
	}
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel kind and the cause, so errors.Is matches either.
func (e *OpError) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// NewOpError is a short constructor for backends.
func NewOpError(op, key string, kind, cause error) *OpError {
	return &OpError{Op: op, Key: key, Kind: kind, Cause: cause}
}

// ErrorClass returns a short, stable label for err, for metrics: "" for nil, then
// "not_found", "precondition_failed", "not_modified", "outcome_unknown", "invalid_key",
// "closed", "corrupt", "conditions_unsupported", "inconsistent", "no_bucket",
// "access_denied", "throttled", then the class a cause names with a method ErrorClass() string
// (faultstore's injected faults: "injected"), then "canceled", "deadline", or "other".
func ErrorClass(err error) string {
	var classed interface{ ErrorClass() string }
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrPreconditionFailed):
		return "precondition_failed"
	case errors.Is(err, ErrNotModified):
		return "not_modified"
	case errors.Is(err, ErrOutcomeUnknown):
		return "outcome_unknown"
	case errors.Is(err, ErrInvalidKey):
		return "invalid_key"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, ErrCorrupt):
		return "corrupt"
	case errors.Is(err, ErrConditionsUnsupported):
		return "conditions_unsupported"
	case errors.Is(err, ErrInconsistent):
		return "inconsistent"
	case errors.Is(err, ErrNoBucket):
		return "no_bucket"
	case errors.Is(err, ErrAccessDenied):
		return "access_denied"
	case errors.Is(err, ErrThrottled):
		return "throttled"
	case errors.As(err, &classed):
		return classed.ErrorClass()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	return "other"
}
