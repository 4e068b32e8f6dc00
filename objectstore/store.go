// Package objectstore is the one seam between sluice and the storage it runs on.
//
// A Store holds immutable-by-convention objects addressed by slash-separated keys. It offers
// what sluice's protocol needs and nothing more: Get of a whole object or a byte range
// (optionally If-None-Match on a version), Head, Put that is unconditional, create-only
// (If-None-Match: *) or compare-and-swap on a version (If-Match), idempotent Delete, and List
// by prefix in byte order, paged. Versions are opaque strings; every successful write gives a
// new one on the memory and file stores, while on S3 the version is the ETag (see package
// manifest for why that is enough).
//
// Errors: every error a Store returns matches, with errors.Is, at most one of the sentinels
// below, and is usually an *OpError carrying the operation, the key and the backend's cause.
// ErrOutcomeUnknown means a write may or may not have taken effect; callers that need
// exactly-once must find out which before retrying. Any other error is a failure that did
// not take effect as far as the backend can tell, and may be retried (Refused tells the
// ones that will fail again until an operator acts).
//
// Keys: non-empty, valid UTF-8, no NUL, no empty path segment, no "." or ".." segment, no
// leading slash. ValidateKey reports the first problem.
//
// This package holds the contract, MemStore (tests, one process), WithPrefix and
// Instrument, and imports no backend. The other backends live in their own packages, so a
// program links only the ones it uses: objectstore/file (a directory shared by the
// processes of one machine) and objectstore/s3 (AWS S3 or an S3-compatible server).
// objectstore/storeurl opens any of them from a URL; objectstore/faultstore injects seeded
// faults for tests; objectstore/storetest is the conformance suite every backend passes.
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

// Span returns the part of an object of size bytes that r selects: its offset, clamped to
// [0, size], and its length, at most what remains after the offset (all of it when Length < 0).
// A nil range selects the whole object.
func (r *ByteRange) Span(size int64) (off, n int64) {
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
	// ReadFrom wants MinRead bytes free before each read, the one that finds the end too:
	// without them it would double the buffer, copying the object, once it held it all.
	buf.Grow(int(max(obj.Size, 0)) + bytes.MinRead)
	if _, err := buf.ReadFrom(obj.Body); err != nil {
		return nil, ObjectInfo{}, NewOpError("get", key, nil, err)
	}
	return buf.Bytes(), obj.ObjectInfo, nil
}

// ReadInto reads the object at key into dst, with dst.ReadFrom: for a caller that sizes
// its buffer itself, or handles the bytes as they arrive.
func ReadInto(ctx context.Context, s Store, key string, dst io.ReaderFrom) (ObjectInfo, error) {
	obj, err := s.Get(ctx, key, GetOptions{})
	if err != nil {
		return ObjectInfo{}, err
	}
	defer obj.Body.Close()
	if _, err := dst.ReadFrom(obj.Body); err != nil {
		return ObjectInfo{}, NewOpError("get", key, nil, err)
	}
	return obj.ObjectInfo, nil
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
