// Package objectstore is the one seam between sluice and the storage it runs on.
//
// A Store holds immutable-by-convention objects addressed by slash-separated keys. It offers
// what sluice's protocol needs and nothing more:
//
//   - Get of a whole object or a byte range, returning the object's version and modification time,
//     optionally conditional on the version having changed (If-None-Match);
//   - Head;
//   - Put that is unconditional, create-only (If-None-Match: *), or compare-and-swap on a
//     version (If-Match);
//   - idempotent Delete;
//   - List by prefix in lexicographic (byte) order, paged.
//
// Versions are opaque strings. Every successful write produces a version that differs from every
// version the key has had before on mem and file stores; on S3 the version is the ETag, which is
// why the manifest carries a write counter (see package manifest).
//
// Errors: every error returned by a Store matches, with errors.Is, at most one of the sentinels
// ErrNotFound, ErrPreconditionFailed, ErrNotModified, ErrOutcomeUnknown, ErrInvalidKey, ErrClosed,
// ErrCorrupt, ErrConditionsUnsupported and ErrInconsistent, and is usually an
// *OpError carrying the operation, the key and the backend's cause. ErrOutcomeUnknown means a
// write may or may not have taken effect (a timeout or a lost connection after the request was
// sent); callers that need exactly-once must find out which before retrying. Any other error is
// a plain failure that did not take effect as far as the backend can tell (but see
// ErrOutcomeUnknown) and may be retried.
//
// Keys: non-empty, valid UTF-8, no NUL, no empty path segment, no "." or ".." segment, no
// leading slash. ValidateKey reports the first problem.
//
// Backends: MemStore (tests, one process), FileStore (a directory shared by the processes of
// one machine; see its doc for the on-disk format and locking) and S3Store (AWS S3 or any
// S3-compatible server; see its doc for error mapping, retries and streaming). Open builds any
// of them from a URL (mem://, file:///dir or a path, s3://bucket/prefix?endpoint=&region=&path_style=),
// confining keys to the URL's prefix with WithPrefix.
//
// Wrappers: NewFaultStore injects seeded failures, outcome-unknown errors and delays for
// protocol tests; Instrument reports each operation's count, bytes, latency and error class to
// an Observer, which cmd/sluice adapts to Prometheus.
//
// Every backend and wrapper passes the conformance suite in package objectstore/storetest; the
// S3 backend runs it against versitygw (scripts/test.sh).
package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
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
	// ErrNoBucket: the S3 bucket does not exist, or a file store's directory is gone
	// (ErrRootMissing). Not ErrNotFound, so that a missing bucket is never taken for a
	// missing object (a stream that was never created, say). On S3 a HEAD cannot tell the
	// two apart (its 404 has no body), so Head, and a Get of an empty range (made with a
	// HEAD), report ErrNotFound either way; Get, Put, Delete and List report ErrNoBucket.
	ErrNoBucket = errors.New("objectstore: bucket does not exist")
	// ErrAccessDenied: the store refused the credentials or the operation (S3's 403:
	// AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch...). Nothing was applied.
	// Manifest loads return it at once. (A 403 for a skewed clock is normally absorbed by
	// the AWS SDK, which corrects its clock offset and retries reads.)
	ErrAccessDenied = errors.New("objectstore: access denied")
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

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key     string
	Size    int64
	Version string    // opaque; changes on every write
	ModTime time.Time // the store's own clock
}

// ByteRange selects Length bytes starting at Offset. Length < 0 means "to the end".
type ByteRange struct {
	Offset int64
	Length int64
}

// span returns the part of an object of size bytes that r selects: its offset, clamped to
// [0, size], and its length, at most what remains after the offset (all of it when Length < 0).
// A nil range selects the whole object.
func (r *ByteRange) span(size int64) (off, n int64) {
	if r == nil {
		return 0, size
	}
	off = min(max(r.Offset, 0), size)
	n = size - off
	if r.Length >= 0 && r.Length < n {
		n = r.Length
	}
	return off, n
}

// GetOptions modify a Get. The zero value reads the whole object unconditionally.
type GetOptions struct {
	// Range, if non-nil, reads only part of the object. A range that starts past the end of
	// the object returns an empty body.
	Range *ByteRange
	// IfNoneMatch, if non-empty, makes the Get fail with ErrNotModified when the object's
	// current version equals it.
	IfNoneMatch string
}

// Object is an open object body. The caller must Close Body.
type Object struct {
	ObjectInfo
	Body io.ReadCloser
}

// PutCondition selects unconditional, create-only or compare-and-swap writes.
// The zero value is an unconditional put.
type PutCondition struct {
	// IfAbsent: succeed only when the key does not exist (If-None-Match: *).
	IfAbsent bool
	// IfMatch: succeed only when the key exists at exactly this version.
	IfMatch string
}

// Validate reports a contradictory condition.
func (c PutCondition) Validate() error {
	if c.IfAbsent && c.IfMatch != "" {
		return errors.New("objectstore: put condition sets both IfAbsent and IfMatch")
	}
	return nil
}

// Unconditional, IfAbsent and IfMatch are readable constructors for PutCondition.
func Unconditional() PutCondition         { return PutCondition{} }
func IfAbsent() PutCondition              { return PutCondition{IfAbsent: true} }
func IfMatch(version string) PutCondition { return PutCondition{IfMatch: version} }

// ListPage is one page of a listing.
type ListPage struct {
	Objects []ObjectInfo
	// NextStartAfter is the key to pass as startAfter for the next page; empty when the
	// listing is complete.
	NextStartAfter string
}

// Store is the storage interface. All methods are safe for concurrent use.
type Store interface {
	// Get opens an object. ErrNotFound if absent; ErrNotModified per GetOptions.IfNoneMatch.
	Get(ctx context.Context, key string, opts GetOptions) (*Object, error)
	// Head returns an object's info. ErrNotFound if absent.
	Head(ctx context.Context, key string) (ObjectInfo, error)
	// Put writes size bytes read from body under key, atomically: readers see the old
	// object or the new one, never a part. size must be the exact length of body.
	Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error)
	// Delete removes key. Deleting an absent key succeeds.
	Delete(ctx context.Context, key string) error
	// List returns up to limit objects (limit <= 0 means the backend's page size, at most 1000)
	// whose keys start with prefix and sort strictly after startAfter, in byte order.
	List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error)
	// Close releases resources. Operations after Close fail with ErrClosed.
	Close() error
}

// PageLimit is the Store contract's page bound applied to a requested limit: limit itself when
// it is between 1 and 1000, otherwise 1000.
func PageLimit(limit int) int {
	if limit <= 0 || limit > 1000 {
		return 1000
	}
	return limit
}

// ValidateKey reports why key cannot name an object, or nil.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, key)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: %q contains NUL", ErrInvalidKey, key)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("%w: %q is absolute", ErrInvalidKey, key)
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty path segment", ErrInvalidKey, key)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, key, seg)
		}
	}
	return nil
}

// ReadAll reads a whole object into memory.
func ReadAll(ctx context.Context, s Store, key string) ([]byte, ObjectInfo, error) {
	obj, err := s.Get(ctx, key, GetOptions{})
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	defer obj.Body.Close()
	var buf bytes.Buffer
	buf.Grow(int(max(obj.Size, 0)))
	if _, err := buf.ReadFrom(obj.Body); err != nil {
		return nil, ObjectInfo{}, NewOpError("get", key, nil, err)
	}
	return buf.Bytes(), obj.ObjectInfo, nil
}

// PutBytes writes b under key.
func PutBytes(ctx context.Context, s Store, key string, b []byte, cond PutCondition) (ObjectInfo, error) {
	return s.Put(ctx, key, bytes.NewReader(b), int64(len(b)), cond)
}

// ListAll walks every object under prefix, page by page, calling fn for each. It stops at the
// first error from fn or from the store.
func ListAll(ctx context.Context, s Store, prefix string, fn func(ObjectInfo) error) error {
	after := ""
	for {
		page, err := s.List(ctx, prefix, after, 0)
		if err != nil {
			return err
		}
		for _, o := range page.Objects {
			if err := fn(o); err != nil {
				return err
			}
		}
		if page.NextStartAfter == "" {
			return nil
		}
		after = page.NextStartAfter
	}
}

var (
	errNegativeSize    = errors.New("negative size")
	errBodyLonger      = errors.New("body is longer than the given size")
	errExists          = errors.New("object exists")
	errVersionMismatch = errors.New("version does not match")
)
