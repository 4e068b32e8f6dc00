package gcs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/internal/sized"
)

// DefaultKeyWritesPerSecond is GCS's documented sustained rate of writes to one object name.
const DefaultKeyWritesPerSecond = 1.0

// Config configures New.
type Config struct {
	// Bucket is required.
	Bucket string
	// ClientOptions are passed to storage.NewClient (credentials, endpoint, HTTP client).
	// None: Google's usual credential chain, or the emulator in STORAGE_EMULATOR_HOST.
	ClientOptions []option.ClientOption
	// KeyWritesPerSecond is the rate of writes to one object name the store states to
	// writers (objectstore.WriteLimiter). Zero means DefaultKeyWritesPerSecond; it must not
	// be negative.
	KeyWritesPerSecond float64
	// Logger, if nil, discards.
	Logger *slog.Logger
}

// Store is an objectstore.Store on one GCS bucket; see the package documentation.
type Store struct {
	client *storage.Client
	bkt    *storage.BucketHandle
	bucket string
	rate   float64
	logger *slog.Logger
	closed atomic.Bool
}

// New creates a GCS store. It builds the client (finding credentials) but does not contact
// the service.
func New(ctx context.Context, cfg Config) (*Store, error) {
	var problems []error
	if cfg.Bucket == "" {
		problems = append(problems, errors.New("objectstore: gcs: no bucket"))
	} else if err := ValidateBucket(cfg.Bucket); err != nil {
		problems = append(problems, err)
	}
	rate := cfg.KeyWritesPerSecond
	if rate < 0 {
		problems = append(problems, fmt.Errorf("objectstore: gcs: KeyWritesPerSecond %v is negative", rate))
	} else if rate == 0 {
		rate = DefaultKeyWritesPerSecond
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	client, err := storage.NewClient(ctx, cfg.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("objectstore: gcs: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{client: client, bkt: client.Bucket(cfg.Bucket), bucket: cfg.Bucket, rate: rate, logger: logger}, nil
}

// ValidateBucket reports a name GCS cannot hold as a bucket: 3 to 63 characters (222 with
// dots) of lowercase letters, digits, '-', '_' and '.', starting and ending with a letter
// or digit.
func ValidateBucket(name string) error {
	max := 63
	if strings.Contains(name, ".") {
		max = 222
	}
	ok := len(name) >= 3 && len(name) <= max
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		ok = alnum || (i > 0 && i < len(name)-1 && (c == '-' || c == '_' || c == '.'))
	}
	if !ok {
		return fmt.Errorf("objectstore: gcs: bucket name %q: want 3-63 lowercase letters, digits, '-', '_' or '.', starting and ending with a letter or digit", name)
	}
	return nil
}

// Bucket returns the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

// Client returns the underlying client, for operations this package does not cover.
func (s *Store) Client() *storage.Client { return s.client }

// KeyWritesPerSecond implements objectstore.WriteLimiter.
func (s *Store) KeyWritesPerSecond() float64 { return s.rate }

// EnsureBucket creates the bucket in project if it does not exist (the emulator ignores the
// project).
func (s *Store) EnsureBucket(ctx context.Context, project string) error {
	if _, err := s.bkt.Attrs(ctx); err == nil {
		return nil
	} else if !errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("objectstore: gcs: bucket %q: %w", s.bucket, err)
	}
	err := s.bkt.Create(ctx, project, nil)
	if err == nil || status(err) == http.StatusConflict {
		return nil
	}
	return fmt.Errorf("objectstore: gcs: create bucket %q: %w", s.bucket, err)
}

func (s *Store) check(ctx context.Context, op, key string) error {
	return objectstore.CheckOp(ctx, s.closed.Load(), op, key, nil)
}

// version formats a generation as a version; generation parses one, 0 if it names none.
func version(gen int64) string { return strconv.FormatInt(gen, 10) }

func generation(v string) int64 {
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil || g <= 0 || version(g) != v {
		return 0
	}
	return g
}

// Get implements Store.
func (s *Store) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return nil, err
	}
	off, length := int64(0), int64(-1)
	if r := opts.Range; r != nil {
		off = max(r.Offset, 0)
		if r.Length >= 0 {
			length = r.Length
		}
	}
	rd, err := s.bkt.Object(key).NewRangeReader(ctx, off, length)
	if status(err) == http.StatusRequestedRangeNotSatisfiable {
		// A range that starts at or past the end: the object's info and no bytes.
		rd, err = s.bkt.Object(key).NewRangeReader(ctx, 0, 0)
		if err == nil {
			rd.Close()
			info := s.readerInfo(key, rd)
			if opts.IfNoneMatch != "" && opts.IfNoneMatch == info.Version {
				return nil, objectstore.NewOpError("get", key, objectstore.ErrNotModified, nil)
			}
			return &objectstore.Object{ObjectInfo: info, Body: io.NopCloser(strings.NewReader(""))}, nil
		}
	}
	if err != nil {
		return nil, s.readErr("get", key, err)
	}
	info := s.readerInfo(key, rd)
	if opts.IfNoneMatch != "" && opts.IfNoneMatch == info.Version {
		rd.Close()
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotModified, nil)
	}
	return &objectstore.Object{ObjectInfo: info, Body: rd}, nil
}

func (s *Store) readerInfo(key string, rd *storage.Reader) objectstore.ObjectInfo {
	a := rd.Attrs
	return objectstore.ObjectInfo{Key: key, Size: a.Size, Version: version(a.Generation), ModTime: a.LastModified}
}

// Head implements Store.
func (s *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if err := s.check(ctx, "head", key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	a, err := s.bkt.Object(key).Attrs(ctx)
	if err != nil {
		return objectstore.ObjectInfo{}, s.readErr("head", key, err)
	}
	return attrsInfo(a), nil
}

func attrsInfo(a *storage.ObjectAttrs) objectstore.ObjectInfo {
	return objectstore.ObjectInfo{Key: a.Name, Size: a.Size, Version: version(a.Generation), ModTime: a.Updated}
}

// Put implements Store.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if err := s.check(ctx, "put", key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	if err := cond.Validate(); err != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, err)
	}
	if size < 0 {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, sized.ErrNegative)
	}
	obj := s.bkt.Object(key).Retryer(storage.WithPolicy(storage.RetryNever))
	switch {
	case cond.IfAbsent:
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	case cond.IfMatch != "":
		g := generation(cond.IfMatch)
		if g == 0 {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed,
				fmt.Errorf("version %q is not a GCS generation", cond.IfMatch))
		}
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	// A body that can be read twice is checked first: its length, and its CRC32C, which
	// the upload then carries, so that the service stores these bytes or nothing.
	crc, checked, err := checksum(body, size)
	if err != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tctx, wrote := sentTrace(wctx)
	w := obj.NewWriter(tctx)
	w.ChunkSize = 0 // one request: nothing resumable is left behind, nothing is retried
	w.ContentType = "application/octet-stream"
	if checked {
		w.CRC32C, w.SendCRC32C = crc, true
	}
	sr := sized.NewReader(body, size)
	if _, err := io.Copy(w, sr); err != nil {
		// Abandon the upload: the request's body fails, so the request is cut before its
		// end (the multipart body's closing boundary is never sent) and GCS stores
		// nothing. Not Close, which would end the body cleanly and complete the upload
		// with what was sent; CloseWithError fails the body at once, where cancel only
		// makes a goroutine do so. (fake-gcs-server stores a cut multipart body's part
		// anyway: seekable bodies are checked before anything is sent, above.)
		_ = w.CloseWithError(err) //nolint:staticcheck // the synchronous abort is the point
		cancel()
		if sr.Err() != nil {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, sr.Err())
		}
		return objectstore.ObjectInfo{}, s.putErr(key, cond, wrote.Load(), err)
	}
	if err := w.Close(); err != nil {
		if sr.Err() != nil {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, sr.Err())
		}
		if status(err) == http.StatusNotFound && s.bucketGone(ctx) {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrNoBucket, err)
		}
		return objectstore.ObjectInfo{}, s.putErr(key, cond, wrote.Load(), err)
	}
	a := w.Attrs()
	info := objectstore.ObjectInfo{Key: key, Size: size, Version: version(a.Generation), ModTime: a.Updated}
	if info.ModTime.IsZero() {
		info.ModTime = time.Now()
	}
	return info, nil
}

// checksum returns the CRC32C of the size bytes of body, and rewinds it, when body can be
// rewound (a *bytes.Reader, a file); checked is false otherwise. A body of another length
// fails here, before any request.
func checksum(body io.Reader, size int64) (crc uint32, checked bool, err error) {
	rs, ok := body.(io.Seeker)
	if !ok {
		return 0, false, nil
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, false, nil // not really seekable: stream it
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	sr := sized.NewReader(body, size)
	if _, err := io.Copy(h, sr); err != nil {
		return 0, false, err
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return 0, false, fmt.Errorf("rewinding the body: %w", err)
	}
	return h.Sum32(), true, nil
}

// Delete implements Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, "delete", key); err != nil {
		return err
	}
	err := s.bkt.Object(key).Delete(ctx)
	if err == nil {
		return nil
	}
	if status(err) == http.StatusNotFound && !noBucket(err) {
		// The object is absent, unless the bucket is: not every server says which.
		if s.bucketGone(ctx) {
			return objectstore.NewOpError("delete", key, objectstore.ErrNoBucket, err)
		}
		return nil
	}
	return s.readErr("delete", key, err)
}

// bucketGone reports whether the bucket is known not to exist: a 404 to an object
// request names the bucket on GCS, but not on every emulator.
func (s *Store) bucketGone(ctx context.Context) bool {
	_, err := s.bkt.Attrs(ctx)
	return errors.Is(err, storage.ErrBucketNotExist)
}

// Close implements Store. It does not wait for operations in flight.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.client.Close()
}
