package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/internal/sized"
)

// Store is an objectstore.Store on one bucket; see the package documentation for error
// mapping, retries and streaming. It is safe for concurrent use.
type Store struct {
	client  *awss3.Client
	bucket  string
	logger  *slog.Logger
	closed  atomic.Bool
	httpCli *http.Client // non-nil when the store owns idle connections to close

	bucketOK atomic.Bool // a HeadBucket found the bucket (or could not tell): checkBucket

	condMu    sync.Mutex
	condOK    bool   // the server honours conditional puts (checked, or trusted)
	condCause error  // it does not: every conditional put fails with ErrConditionsUnsupported and this
	server    string // the endpoint, for messages ("AWS S3" without one)
}

// Bucket returns the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

// Client returns the underlying SDK client, for operations this package does not cover.
func (s *Store) Client() *awss3.Client { return s.client }

// EnsureBucket creates the bucket if it does not exist.
func (s *Store) EnsureBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &s.bucket})
	if err == nil {
		return nil
	}
	if status(err) != http.StatusNotFound {
		return fmt.Errorf("objectstore: s3: head bucket %q: %w", s.bucket, err)
	}
	in := &awss3.CreateBucketInput{Bucket: &s.bucket}
	if r := s.client.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err = s.client.CreateBucket(ctx, in)
	if err == nil {
		return nil
	}
	// Another process may have created it meanwhile.
	if _, herr := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &s.bucket}); herr == nil {
		return nil
	}
	return fmt.Errorf("objectstore: s3: create bucket %q: %w", s.bucket, err)
}

func (s *Store) check(ctx context.Context, op, key string) error {
	return objectstore.CheckOp(ctx, s.closed.Load(), op, key, nil)
}

// Get implements Store.
func (s *Store) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return nil, err
	}
	in := &awss3.GetObjectInput{Bucket: &s.bucket, Key: &key}
	if opts.IfNoneMatch != "" {
		in.IfNoneMatch = aws.String(opts.IfNoneMatch)
	}
	if r := opts.Range; r != nil {
		off := max(r.Offset, 0)
		if r.Length == 0 {
			return s.emptyRange(ctx, key, opts)
		}
		if r.Length > 0 {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+r.Length-1))
		} else {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
		}
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if status(err) == http.StatusRequestedRangeNotSatisfiable {
			return s.emptyRange(ctx, key, opts)
		}
		return nil, s.readErr("get", key, err)
	}
	info := objectstore.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), Version: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}
	if in.Range != nil {
		total, err := totalFromContentRange(aws.ToString(out.ContentRange))
		if err != nil {
			out.Body.Close()
			return nil, objectstore.NewOpError("get", key, nil, err)
		}
		info.Size = total
	}
	return &objectstore.Object{ObjectInfo: info, Body: out.Body}, nil
}

// emptyRange answers a range that selects no bytes (zero length, or starting at or past the
// end, which S3 answers with 416) with the object's info and an empty body.
func (s *Store) emptyRange(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	info, err := s.head(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	if opts.IfNoneMatch != "" && opts.IfNoneMatch == info.Version {
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotModified, nil)
	}
	return &objectstore.Object{ObjectInfo: info, Body: io.NopCloser(strings.NewReader(""))}, nil
}

func totalFromContentRange(cr string) (int64, error) {
	i := strings.LastIndexByte(cr, '/')
	if i < 0 {
		return 0, fmt.Errorf("objectstore: s3: unexpected Content-Range %q", cr)
	}
	n, err := strconv.ParseInt(cr[i+1:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("objectstore: s3: unexpected Content-Range %q", cr)
	}
	return n, nil
}

// Head implements Store.
func (s *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if err := s.check(ctx, "head", key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	return s.head(ctx, "head", key)
}

func (s *Store) head(ctx context.Context, op, key string) (objectstore.ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return objectstore.ObjectInfo{}, s.readErr(op, key, err)
	}
	return objectstore.ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), Version: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}, nil
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
	if err := s.checkBucket(ctx, key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	if cond != (objectstore.PutCondition{}) {
		if err := s.checkConditions(ctx, key); err != nil {
			return objectstore.ObjectInfo{}, err
		}
	}
	info, err := s.put(ctx, key, body, size, cond)
	if errors.Is(err, objectstore.ErrConditionsUnsupported) {
		// A 501 to a conditional put: the server cannot do them, now or later.
		s.condMu.Lock()
		if s.condCause == nil {
			s.condCause = opCause(err)
		}
		s.condMu.Unlock()
	}
	return info, err
}

func (s *Store) put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	sr := sized.NewReader(body, size)
	in := &awss3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &key,
		Body:          sr,
		ContentLength: aws.Int64(size),
	}
	switch {
	case cond.IfAbsent:
		in.IfNoneMatch = aws.String("*")
	case cond.IfMatch != "":
		in.IfMatch = aws.String(cond.IfMatch)
	}
	tctx, wrote := sentTrace(ctx)
	out, err := s.client.PutObject(tctx, in,
		awss3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware),
		func(o *awss3.Options) { o.RetryMaxAttempts = 1 },
	)
	if err != nil {
		perr := s.putErr(key, cond, sr, wrote.Load(), err)
		if cond.IfMatch != "" && status(err) == http.StatusNotFound && errors.Is(perr, objectstore.ErrPreconditionFailed) {
			// "No such object" for an If-Match put: a conflict, unless the object is there at
			// the very version the condition names.
			info, herr := s.Head(ctx, key)
			if herr == nil && info.Version == cond.IfMatch {
				s.logger.Warn("objectstore: s3: the server refused an If-Match put for want of the object it serves at that version", "bucket", s.bucket, "key", key, "version", cond.IfMatch)
				return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrInconsistent, fmt.Errorf("If-Match %s answered 404 while HEAD serves that version: %w", cond.IfMatch, err))
			}
			// Some servers (SeaweedFS) test the condition before the bucket: a 404 for the
			// object may be one for the bucket.
			if herr != nil && !errors.Is(herr, objectstore.ErrNoBucket) {
				if _, berr := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &s.bucket}); status(berr) == http.StatusNotFound {
					herr = objectstore.ErrNoBucket
				}
			}
			if errors.Is(herr, objectstore.ErrNoBucket) {
				return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrNoBucket, err)
			}
		}
		return objectstore.ObjectInfo{}, perr
	}
	if sr.Err() != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, sr.Err())
	}
	modTime := time.Now()
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		if t, err := http.ParseTime(raw.Header.Get("Date")); err == nil {
			modTime = t
		}
	}
	return objectstore.ObjectInfo{Key: key, Size: size, Version: aws.ToString(out.ETag), ModTime: modTime}, nil
}

// Delete implements Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, "delete", key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
	if apiCode(err) == "NoSuchBucket" {
		return objectstore.NewOpError("delete", key, objectstore.ErrNoBucket, err)
	}
	if status(err) == http.StatusForbidden {
		return objectstore.NewOpError("delete", key, objectstore.ErrAccessDenied, err)
	}
	if err != nil && status(err) != http.StatusNotFound {
		return objectstore.NewOpError("delete", key, nil, err)
	}
	return nil
}

// Close implements Store. It does not wait for operations in flight.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.httpCli != nil {
		s.httpCli.CloseIdleConnections()
	}
	return nil
}
