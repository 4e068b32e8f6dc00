package objectstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3Config configures NewS3Store.
type S3Config struct {
	// Bucket is required.
	Bucket string
	// Region, if empty, comes from the standard chain (AWS_REGION, shared config); a store
	// with no region at all is refused.
	Region string
	// Endpoint, if set, is the base URL of an S3-compatible server ("http://127.0.0.1:7070").
	// Empty means AWS S3.
	Endpoint string
	// PathStyle addresses buckets as ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY.
	// S3-compatible servers usually need it.
	PathStyle bool
	// HTTPClient, if set, replaces the SDK's HTTP client (ReadTimeout still applies).
	HTTPClient *http.Client
	// ReadTimeout, if positive, fails a request once the server has been silent for that
	// long while the request waits on it: from the request's start, every part of the
	// upload the server takes and every read of its answer that brings bytes starts the
	// clock again, and it stops while the client is not waiting on the server: while the
	// request waits for a free connection (dialing one counts), while the body source
	// produces the upload's next bytes, and while the caller does not read the answer's
	// body. (Credential providers' requests, STS and SSO, do not have it.) A server
	// that stops answering then fails the request (a put with ErrOutcomeUnknown, other
	// calls after the SDK's retries) instead of holding it, and whoever waits on it, for
	// ever, while a slow transfer that keeps moving is not cut. Zero means no such bound
	// (the SDK's own default for S3); store URLs (ParseURL, Open) use DefaultS3ReadTimeout.
	// Must not be negative.
	ReadTimeout time.Duration
	// Logger, if nil, discards.
	Logger *slog.Logger
	// TrustConditionalWrites skips the check that the server honours If-None-Match and
	// If-Match, which the store otherwise makes once, before its first conditional put (a
	// server that ignores them would turn every create-only or compare-and-swap put into an
	// overwrite). For tests against fakes.
	TrustConditionalWrites bool
}

// S3Store is a Store on an S3 bucket (AWS or S3-compatible), using aws-sdk-go-v2. Keys are
// object keys in the bucket; wrap the store with WithPrefix to confine it to a prefix.
//
// Versions are ETags as the server returns them (quoted). For S3 and most compatible servers
// an ETag is the MD5 of the content, so rewriting identical bytes can keep the version; the
// manifest's write counter exists for that reason.
//
// Conditional puts send If-None-Match: * (create-only) or If-Match: <etag>. The answers that
// mean "the condition does not hold" map to ErrPreconditionFailed with the server's error kept
// as the cause: 412 Precondition Failed; 409 ConditionalRequestConflict (a concurrent
// conditional write won); and 404 NoSuchKey to an If-Match put, which S3-compatible servers
// send when the object is absent. (If a HEAD then finds the object at the version the put
// named, the server contradicts itself, and the put fails with ErrInconsistent instead: as a
// conflict it would be retried against that version without a word in the logs.)
//
// Retries and outcome-unknown. Put is never retried by the SDK: its retryer could resend a
// conditional put whose first attempt succeeded but whose answer was lost, and the second
// attempt would then fail with a spurious 412 against the writer's own new version. Instead,
// when a put fails after the request may have reached the server (a timeout, a connection
// reset or closed while waiting for the answer, a 5xx answer, a context ended mid-request),
// Put returns ErrOutcomeUnknown and the caller resolves it (the manifest layer re-reads and
// looks for its own write). A put that failed before anything was sent (dial errors, a body
// that is shorter or longer than its size) is a plain error. Get, Head, List and Delete are
// idempotent and use the SDK's standard retryer.
//
// Streaming. Put sends the body as it reads it, with Content-Length set and an unsigned
// payload (X-Amz-Content-Sha256: UNSIGNED-PAYLOAD), so a 64 MiB object is neither buffered
// nor read twice for the SigV4 payload hash; the SDK's automatic request checksums are off
// (RequestChecksumCalculation WhenRequired), which S3-compatible servers such as versitygw
// need. Use TLS endpoints for integrity in transit. Get returns the response body as is.
type S3Store struct {
	client  *s3.Client
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

// NewS3Store creates an S3 store. It loads credentials and region from the standard chain
// (environment, shared config files, instance roles) but does not contact the server.
func NewS3Store(ctx context.Context, cfg S3Config) (*S3Store, error) {
	var problems []error
	if cfg.Bucket == "" {
		problems = append(problems, errors.New("objectstore: s3: missing bucket"))
	} else if err := validateBucket(cfg.Bucket); err != nil {
		problems = append(problems, err)
	}
	if cfg.Endpoint != "" {
		if err := validateEndpoint(cfg.Endpoint); err != nil {
			problems = append(problems, err)
		}
	}
	if cfg.ReadTimeout < 0 {
		problems = append(problems, fmt.Errorf("objectstore: s3: read timeout %v must not be negative (0: none)", cfg.ReadTimeout))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objectstore: s3: loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("objectstore: s3: no region: set region= in the URL, S3Config.Region or AWS_REGION")
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.DisableLogOutputChecksumValidationSkipped = true
		o.APIOptions = append(o.APIOptions, unsignedAcceptEncoding)
		if cfg.ReadTimeout > 0 {
			// Around the client the S3 client settled on: the SDK's own (with a custom CA
			// bundle and the defaults mode's connect timeouts applied) or HTTPClient.
			o.HTTPClient = &idleWatch{next: o.HTTPClient, timeout: cfg.ReadTimeout}
		}
	})
	server := cfg.Endpoint
	if server == "" {
		server = "AWS S3"
	}
	return &S3Store{client: client, bucket: cfg.Bucket, logger: logger, httpCli: cfg.HTTPClient, condOK: cfg.TrustConditionalWrites, server: server}, nil
}

// DefaultS3ReadTimeout is S3Config.ReadTimeout for stores opened from a URL without
// read_timeout: far longer than a healthy server stays silent within a request (it takes
// a put's body as it comes and answers once it has it, and sends a get's body as it reads
// it), short enough that a hung server fails requests within minutes.
const DefaultS3ReadTimeout = 2 * time.Minute

// unsignedAcceptEncoding leaves the Accept-Encoding header the SDK sends out of the request's
// signature: a proxy in front of the server may change it (Google Cloud Storage's front end
// appends "gzip(gfe)"), and the server would then refuse every request as badly signed
// (aws/aws-sdk-go-v2#1816). The header is taken off before signing and put back after.
func unsignedAcceptEncoding(stack *middleware.Stack) error {
	type saved struct{}
	drop := middleware.FinalizeMiddlewareFunc("SluiceDropAcceptEncoding", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			if v := req.Header.Get("Accept-Encoding"); v != "" {
				ctx = middleware.WithStackValue(ctx, saved{}, v)
				req.Header.Del("Accept-Encoding")
			}
		}
		return next.HandleFinalize(ctx, in)
	})
	restore := middleware.FinalizeMiddlewareFunc("SluiceRestoreAcceptEncoding", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			if v, _ := middleware.GetStackValue(ctx, saved{}).(string); v != "" {
				req.Header.Set("Accept-Encoding", v)
			}
		}
		return next.HandleFinalize(ctx, in)
	})
	if err := stack.Finalize.Insert(drop, "Signing", middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(restore, "Signing", middleware.After)
}

func validateBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("objectstore: s3: bucket name %q must be 3 to 63 characters", b)
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return fmt.Errorf("objectstore: s3: bucket name %q: character %q not allowed (lower-case letters, digits, '-', '.', '_')", b, c)
		}
	}
	return nil
}

func validateEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil {
		return fmt.Errorf("objectstore: s3: bad endpoint %q: %w", e, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("objectstore: s3: bad endpoint %q: scheme must be http or https", e)
	}
	if u.Host == "" {
		return fmt.Errorf("objectstore: s3: bad endpoint %q: no host", e)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("objectstore: s3: bad endpoint %q: only scheme://host[:port][/path] is allowed", u.Redacted())
	}
	return nil
}

// Bucket returns the store's bucket.
func (s *S3Store) Bucket() string { return s.bucket }

// Client returns the underlying SDK client, for operations this package does not cover.
func (s *S3Store) Client() *s3.Client { return s.client }

// EnsureBucket creates the bucket if it does not exist.
func (s *S3Store) EnsureBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket})
	if err == nil {
		return nil
	}
	if status(err) != http.StatusNotFound {
		return fmt.Errorf("objectstore: s3: head bucket %q: %w", s.bucket, err)
	}
	in := &s3.CreateBucketInput{Bucket: &s.bucket}
	if r := s.client.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err = s.client.CreateBucket(ctx, in)
	if err == nil {
		return nil
	}
	// Another process may have created it meanwhile.
	if _, herr := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); herr == nil {
		return nil
	}
	return fmt.Errorf("objectstore: s3: create bucket %q: %w", s.bucket, err)
}

func (s *S3Store) check(ctx context.Context, op, key string) error {
	if s.closed.Load() {
		return NewOpError(op, key, ErrClosed, nil)
	}
	if err := ValidateKey(key); err != nil {
		return NewOpError(op, key, ErrInvalidKey, err)
	}
	if err := ctx.Err(); err != nil {
		return NewOpError(op, key, nil, err)
	}
	return nil
}

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
func (s *S3Store) readErr(op, key string, err error) error {
	switch st := status(err); {
	case apiCode(err) == "NoSuchBucket":
		return NewOpError(op, key, ErrNoBucket, err)
	case st == http.StatusForbidden:
		return NewOpError(op, key, ErrAccessDenied, err)
	case st == http.StatusNotFound && op != "list":
		return NewOpError(op, key, ErrNotFound, err)
	case st == http.StatusNotModified:
		return NewOpError(op, key, ErrNotModified, err)
	}
	return NewOpError(op, key, nil, err)
}

// putErr classifies PutObject errors; body is the request body reader, and wrote tells
// whether the request's headers were written.
func (s *S3Store) putErr(key string, cond PutCondition, body *sizedReader, wrote bool, err error) error {
	if body.err != nil {
		// The body failed before it was complete: the server cannot have stored the object.
		return NewOpError("put", key, nil, body.err)
	}
	st := status(err)
	switch {
	case apiCode(err) == "NoSuchBucket":
		return NewOpError("put", key, ErrNoBucket, err)
	case st == http.StatusForbidden:
		return NewOpError("put", key, ErrAccessDenied, err)
	case cond != (PutCondition{}) && (st == http.StatusNotImplemented || apiCode(err) == "NotImplemented"):
		// A definite refusal ("a header you provided implies functionality that is not
		// implemented"): nothing was stored, and no conditional put will work here.
		return NewOpError("put", key, ErrConditionsUnsupported, err)
	case st == http.StatusPreconditionFailed:
		return NewOpError("put", key, ErrPreconditionFailed, err)
	case st == http.StatusConflict && apiCode(err) == "ConditionalRequestConflict":
		return NewOpError("put", key, ErrPreconditionFailed, err)
	case st == http.StatusNotFound && cond.IfMatch != "" && (apiCode(err) == "NoSuchKey" || apiCode(err) == "NotFound"):
		return NewOpError("put", key, ErrPreconditionFailed, err)
	case st >= 500:
		s.logger.Debug("objectstore: s3: put outcome unknown", "bucket", s.bucket, "key", key, "status", st, "err", err)
		return NewOpError("put", key, ErrOutcomeUnknown, err)
	case st != 0:
		return NewOpError("put", key, nil, err)
	case notSent(err) || !wrote:
		return NewOpError("put", key, nil, err)
	}
	// No response: the request may have been applied.
	s.logger.Debug("objectstore: s3: put outcome unknown", "bucket", s.bucket, "key", key, "err", err)
	return NewOpError("put", key, ErrOutcomeUnknown, err)
}

// Get implements Store.
func (s *S3Store) Get(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return nil, err
	}
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}
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
	info := ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), Version: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}
	if in.Range != nil {
		total, err := totalFromContentRange(aws.ToString(out.ContentRange))
		if err != nil {
			out.Body.Close()
			return nil, NewOpError("get", key, nil, err)
		}
		info.Size = total
	}
	return &Object{ObjectInfo: info, Body: out.Body}, nil
}

// emptyRange answers a range that selects no bytes (zero length, or starting at or past the
// end, which S3 answers with 416) with the object's info and an empty body.
func (s *S3Store) emptyRange(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	info, err := s.head(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	if opts.IfNoneMatch != "" && opts.IfNoneMatch == info.Version {
		return nil, NewOpError("get", key, ErrNotModified, nil)
	}
	return &Object{ObjectInfo: info, Body: io.NopCloser(strings.NewReader(""))}, nil
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
func (s *S3Store) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := s.check(ctx, "head", key); err != nil {
		return ObjectInfo{}, err
	}
	return s.head(ctx, "head", key)
}

func (s *S3Store) head(ctx context.Context, op, key string) (ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return ObjectInfo{}, s.readErr(op, key, err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), Version: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Put implements Store.
func (s *S3Store) Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	if err := s.check(ctx, "put", key); err != nil {
		return ObjectInfo{}, err
	}
	if err := cond.Validate(); err != nil {
		return ObjectInfo{}, NewOpError("put", key, nil, err)
	}
	if size < 0 {
		return ObjectInfo{}, NewOpError("put", key, nil, errNegativeSize)
	}
	if err := s.checkBucket(ctx, key); err != nil {
		return ObjectInfo{}, err
	}
	if cond != (PutCondition{}) {
		if err := s.checkConditions(ctx, key); err != nil {
			return ObjectInfo{}, err
		}
	}
	info, err := s.put(ctx, key, body, size, cond)
	if errors.Is(err, ErrConditionsUnsupported) {
		// A 501 to a conditional put: the server cannot do them, now or later.
		s.condMu.Lock()
		if s.condCause == nil {
			s.condCause = opCause(err)
		}
		s.condMu.Unlock()
	}
	return info, err
}

// opCause is what the backend reported behind err, an *OpError, or err itself.
func opCause(err error) error {
	var oe *OpError
	if errors.As(err, &oe) && oe.Cause != nil {
		return oe.Cause
	}
	return err
}

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
func (s *S3Store) checkBucket(ctx context.Context, key string) error {
	if s.bucketOK.Load() {
		return nil
	}
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	switch st := status(err); {
	case err == nil:
		s.bucketOK.Store(true)
	case st == http.StatusNotFound:
		return NewOpError("put", key, ErrNoBucket, fmt.Errorf("bucket %q does not exist (HeadBucket before the first put: %w)", s.bucket, err))
	case st >= 500:
	case st != 0:
		s.bucketOK.Store(true)
	default:
		return NewOpError("put", key, nil, fmt.Errorf("not sent: the HeadBucket before the store's first put got no answer: %w", err))
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
func (s *S3Store) checkConditions(ctx context.Context, key string) error {
	s.condMu.Lock()
	defer s.condMu.Unlock()
	unsupported := func(cause error) error {
		return NewOpError("put", key, ErrConditionsUnsupported, cause)
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
		if _, err := s.client.DeleteObject(context.WithoutCancel(ctx), &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &probe}); err != nil && status(err) != http.StatusNotFound {
			s.logger.Warn("objectstore: s3: conditional-write check: deleting its object failed", "key", probe, "err", err)
		}
	}()
	put := func(cond PutCondition) error {
		_, err := s.put(ctx, probe, strings.NewReader("x"), 1, cond)
		return err
	}
	checking := func(err error) error {
		return fmt.Errorf("objectstore: s3: checking that the server honours conditional writes: %w", err)
	}
	if err := put(PutCondition{IfAbsent: true}); err != nil {
		if errors.Is(err, ErrConditionsUnsupported) {
			s.condCause = opCause(err)
			return unsupported(s.condCause)
		}
		return checking(err)
	}
	for _, c := range []struct {
		cond PutCondition
		what string
	}{
		{PutCondition{IfAbsent: true}, "If-None-Match: * (a create-only put of an existing object succeeded)"},
		{PutCondition{IfMatch: `"sluice-condcheck-no-such-version"`}, "If-Match (a put on a version the object never had succeeded)"},
	} {
		switch err := put(c.cond); {
		case err == nil:
			s.condCause = fmt.Errorf("the server at %s (bucket %s) ignores %s", s.server, s.bucket, c.what)
			s.logger.Error("objectstore: s3: the server ignores conditional writes; refusing them", "server", s.server, "bucket", s.bucket, "ignored", c.what)
			return unsupported(s.condCause)
		case errors.Is(err, ErrPreconditionFailed):
		case errors.Is(err, ErrConditionsUnsupported):
			s.condCause = opCause(err)
			return unsupported(s.condCause)
		default:
			return checking(err)
		}
	}
	s.condOK = true
	return nil
}

func (s *S3Store) put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	sr := newSizedReader(body, size)
	in := &s3.PutObjectInput{
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
		s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware),
		func(o *s3.Options) { o.RetryMaxAttempts = 1 },
	)
	if err != nil {
		perr := s.putErr(key, cond, sr, wrote.Load(), err)
		if cond.IfMatch != "" && status(err) == http.StatusNotFound && errors.Is(perr, ErrPreconditionFailed) {
			// "No such object" for an If-Match put: a conflict, unless the object is there at
			// the very version the condition names.
			info, herr := s.Head(ctx, key)
			if herr == nil && info.Version == cond.IfMatch {
				s.logger.Warn("objectstore: s3: the server refused an If-Match put for want of the object it serves at that version", "bucket", s.bucket, "key", key, "version", cond.IfMatch)
				return ObjectInfo{}, NewOpError("put", key, ErrInconsistent, fmt.Errorf("If-Match %s answered 404 while HEAD serves that version: %w", cond.IfMatch, err))
			}
			// Some servers (SeaweedFS) test the condition before the bucket: a 404 for the
			// object may be one for the bucket.
			if herr != nil && !errors.Is(herr, ErrNoBucket) {
				if _, berr := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); status(berr) == http.StatusNotFound {
					herr = ErrNoBucket
				}
			}
			if errors.Is(herr, ErrNoBucket) {
				return ObjectInfo{}, NewOpError("put", key, ErrNoBucket, err)
			}
		}
		return ObjectInfo{}, perr
	}
	if sr.err != nil {
		return ObjectInfo{}, NewOpError("put", key, ErrOutcomeUnknown, sr.err)
	}
	modTime := time.Now()
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		if t, err := http.ParseTime(raw.Header.Get("Date")); err == nil {
			modTime = t
		}
	}
	return ObjectInfo{Key: key, Size: size, Version: aws.ToString(out.ETag), ModTime: modTime}, nil
}

// Delete implements Store.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, "delete", key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
	if apiCode(err) == "NoSuchBucket" {
		return NewOpError("delete", key, ErrNoBucket, err)
	}
	if status(err) == http.StatusForbidden {
		return NewOpError("delete", key, ErrAccessDenied, err)
	}
	if err != nil && status(err) != http.StatusNotFound {
		return NewOpError("delete", key, nil, err)
	}
	return nil
}

// List implements Store.
func (s *S3Store) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	if s.closed.Load() {
		return ListPage{}, NewOpError("list", prefix, ErrClosed, nil)
	}
	if err := ctx.Err(); err != nil {
		return ListPage{}, NewOpError("list", prefix, nil, err)
	}
	limit = PageLimit(limit)
	if utf8.ValidString(prefix) && utf8.ValidString(startAfter) {
		return s.listPage(ctx, prefix, prefix, startAfter, limit)
	}
	// Keys are valid UTF-8 (ValidateKey), but the contract takes any prefix and startAfter,
	// and some servers refuse what is not UTF-8 (SeaweedFS answers 500). Ask for their
	// valid parts and filter here: a prefix that ends part-way through a character matches
	// the keys that go on with it; one with a byte no character can continue with matches
	// none; a startAfter's valid part sorts at or before it.
	sendPrefix := validHead(prefix)
	if rest := prefix[len(sendPrefix):]; rest != "" && utf8.FullRuneInString(rest) {
		return ListPage{}, nil
	}
	page := ListPage{Objects: make([]ObjectInfo, 0, limit)}
	cursor := validBelow(startAfter)
	if sendPrefix != prefix {
		// The prefix goes on with the lead byte of a character (0xC2 or above): keys that
		// go on from its valid part with an ASCII byte sort before it.
		cursor = max(cursor, sendPrefix+"\x7f")
	}
	for {
		// Full pages: the keys between the cursor and the wanted ones are skipped here.
		got, err := s.listPage(ctx, prefix, sendPrefix, cursor, PageLimit(0))
		if err != nil {
			return ListPage{}, err
		}
		for _, o := range got.Objects {
			switch {
			case strings.HasPrefix(o.Key, prefix) && o.Key > startAfter:
				if len(page.Objects) == limit {
					page.NextStartAfter = page.Objects[limit-1].Key
					return page, nil
				}
				page.Objects = append(page.Objects, o)
			case o.Key > prefix && !strings.HasPrefix(o.Key, prefix):
				return page, nil // past the keys with prefix, which sort together
			}
		}
		if got.NextStartAfter == "" {
			return page, nil
		}
		cursor = got.NextStartAfter
	}
}

// validBelow returns a valid UTF-8 string at or below s, close below it, for a listing
// after s to start from: s's valid part, then, where the byte after it cannot follow a
// character, the greatest character below that byte (DEL below a continuation byte,
// U+10FFFF below 0xF5 and up), so that the keys that go on from the valid part with a
// smaller byte are not asked for.
func validBelow(s string) string {
	v := validHead(s)
	if v == s {
		return s
	}
	switch c := s[len(v)]; {
	case c < 0xC2:
		return v + "\x7f"
	case c > 0xF4:
		return v + string(utf8.MaxRune)
	}
	return v
}

// validHead returns the longest prefix of s that is valid UTF-8.
func validHead(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return s[:i]
		}
		i += n
	}
	return s
}

// listPage is one ListObjectsV2 call: up to limit keys starting with sendPrefix after
// startAfter (the caller's prefix names the operation in errors).
//
// It never asks for a single key: MinIO answers max-keys=1 with a prefix and no start-after
// by looking the prefix up as a key, and when that object exists returns it alone as a
// complete listing (IsTruncated false), dropping every other key under the prefix. It asks
// for two instead and keeps the first.
func (s *S3Store) listPage(ctx context.Context, prefix, sendPrefix, startAfter string, limit int) (ListPage, error) {
	ask := max(limit, 2)
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, MaxKeys: aws.Int32(int32(ask))}
	if sendPrefix != "" {
		in.Prefix = aws.String(sendPrefix)
	}
	if startAfter != "" {
		in.StartAfter = aws.String(startAfter)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return ListPage{}, s.readErr("list", prefix, err)
	}
	page := ListPage{Objects: make([]ObjectInfo, 0, len(out.Contents))}
	for _, o := range out.Contents {
		page.Objects = append(page.Objects, ObjectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Version: aws.ToString(o.ETag), ModTime: aws.ToTime(o.LastModified)})
	}
	if len(page.Objects) > ask {
		return ListPage{}, NewOpError("list", prefix, nil, fmt.Errorf("server returned %d keys for max-keys %d", len(page.Objects), ask))
	}
	if len(page.Objects) > limit {
		page.Objects = page.Objects[:limit]
		page.NextStartAfter = page.Objects[limit-1].Key
		return page, nil
	}
	if aws.ToBool(out.IsTruncated) {
		if len(page.Objects) == 0 {
			return ListPage{}, NewOpError("list", prefix, nil, errors.New("server returned an empty truncated page"))
		}
		page.NextStartAfter = page.Objects[len(page.Objects)-1].Key
	}
	return page, nil
}

// Close implements Store. It does not wait for operations in flight.
func (s *S3Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.httpCli != nil {
		s.httpCli.CloseIdleConnections()
	}
	return nil
}
