package azblob

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

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/internal/sized"
)

// Store is an objectstore.Store on one container; see the package documentation.
type Store struct {
	cc        *container.Client
	container string
	rate      float64
	logger    *slog.Logger
	closed    atomic.Bool

	markerMu sync.Mutex
	markers  map[markerKey]string // where the service's listing goes on after a page we returned
	order    []markerKey          // oldest first, for eviction
}

type markerKey struct{ prefix, after string }

// maxMarkers bounds the remembered continuation markers.
const maxMarkers = 256

// New creates an Azure Blob store. It builds the client (and a token credential if one is
// needed) but does not contact the service.
func New(cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Telemetry: policy.TelemetryOptions{ApplicationID: "sluice"},
	}}
	var cc *container.Client
	var err error
	switch {
	case cfg.ConnectionString != "":
		cc, err = container.NewClientFromConnectionString(cfg.ConnectionString, cfg.Container, opts)
	case cfg.AccountKey != "":
		var cred *container.SharedKeyCredential
		cred, err = container.NewSharedKeyCredential(cfg.Account, cfg.AccountKey)
		if err == nil {
			cc, err = container.NewClientWithSharedKeyCredential(containerURL(cfg), cred, opts)
		}
	default:
		cred := cfg.Credential
		if cred == nil {
			cred, err = azidentity.NewDefaultAzureCredential(nil)
		}
		if err == nil {
			cc, err = container.NewClient(containerURL(cfg), cred, opts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("objectstore: azblob: %w", err)
	}
	return newStore(cc, cfg), nil
}

// NewFromClient is New on a container client built elsewhere.
func NewFromClient(cc *container.Client, cfg Config) (*Store, error) {
	if cc == nil {
		return nil, errors.New("objectstore: azblob: nil container client")
	}
	if cfg.KeyWritesPerSecond < 0 {
		return nil, fmt.Errorf("objectstore: azblob: KeyWritesPerSecond %v is negative", cfg.KeyWritesPerSecond)
	}
	return newStore(cc, cfg), nil
}

func newStore(cc *container.Client, cfg Config) *Store {
	rate := cfg.KeyWritesPerSecond
	if rate == 0 {
		rate = DefaultKeyWritesPerSecond
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{cc: cc, container: cfg.Container, rate: rate, logger: logger, markers: map[markerKey]string{}}
}

func containerURL(cfg Config) string {
	ep := cfg.Endpoint
	if ep == "" {
		ep = "https://" + cfg.Account + ".blob.core.windows.net"
	}
	return strings.TrimSuffix(ep, "/") + "/" + cfg.Container
}

// Container returns the store's container name.
func (s *Store) Container() string { return s.container }

// Client returns the underlying container client, for operations this package does not cover.
func (s *Store) Client() *container.Client { return s.cc }

// KeyWritesPerSecond implements objectstore.WriteLimiter.
func (s *Store) KeyWritesPerSecond() float64 { return s.rate }

// EnsureContainer creates the container if it does not exist.
func (s *Store) EnsureContainer(ctx context.Context) error {
	_, err := s.cc.Create(ctx, nil)
	if err == nil || bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return nil
	}
	return fmt.Errorf("objectstore: azblob: create container %q: %w", s.container, err)
}

func (s *Store) check(ctx context.Context, op, key string) error {
	return objectstore.CheckOp(ctx, s.closed.Load(), op, key, ValidateKey)
}

// ValidateKey is objectstore.ValidateKey, and refuses a backslash too: Azure replaces it
// with a slash, so that "a\\b" would silently be "a/b".
func ValidateKey(key string) error {
	if err := objectstore.ValidateKey(key); err != nil {
		return err
	}
	if strings.Contains(key, `\`) {
		return fmt.Errorf("%w: %q has a backslash, which Azure Blob Storage turns into a slash", objectstore.ErrInvalidKey, key)
	}
	return nil
}

// quote returns an ETag in its quoted form, as headers carry it.
func quote(etag string) string {
	if etag == "" || strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, `W/"`) {
		return etag
	}
	return `"` + etag + `"`
}

func etagOf(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return quote(string(*e))
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// Get implements Store.
func (s *Store) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return nil, err
	}
	in := &blob.DownloadStreamOptions{}
	if opts.IfNoneMatch != "" {
		e := azcore.ETag(quote(opts.IfNoneMatch))
		in.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &e}}
	}
	ranged := false
	if r := opts.Range; r != nil {
		off := max(r.Offset, 0)
		if r.Length == 0 {
			return s.emptyRange(ctx, key, opts)
		}
		// The SDK reads Count 0 as "to the end".
		in.Range = blob.HTTPRange{Offset: off, Count: max(r.Length, 0)}
		ranged = off > 0 || r.Length > 0
	}
	var raw *http.Response
	out, err := s.cc.NewBlobClient(key).DownloadStream(policy.WithCaptureResponse(ctx, &raw), in)
	if err == nil && raw != nil && raw.StatusCode == http.StatusNotModified {
		// The SDK counts 304 as a success.
		if out.Body != nil {
			out.Body.Close()
		}
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotModified, nil)
	}
	if err != nil {
		if status(err) == http.StatusRequestedRangeNotSatisfiable {
			return s.emptyRange(ctx, key, opts)
		}
		return nil, s.readErr("get", key, err)
	}
	info := objectstore.ObjectInfo{Key: key, Version: etagOf(out.ETag), ModTime: timeOf(out.LastModified)}
	if opts.IfNoneMatch != "" && quote(opts.IfNoneMatch) == info.Version {
		// In case a server ignores If-None-Match: the ETag read with the body decides.
		out.Body.Close()
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotModified, nil)
	}
	if out.ContentLength != nil {
		info.Size = *out.ContentLength
	}
	if ranged && out.ContentRange != nil {
		total, err := totalFromContentRange(*out.ContentRange)
		if err != nil {
			out.Body.Close()
			return nil, objectstore.NewOpError("get", key, nil, err)
		}
		info.Size = total
	}
	return &objectstore.Object{ObjectInfo: info, Body: out.Body}, nil
}

// emptyRange answers a range that selects no bytes with the object's info and no body.
func (s *Store) emptyRange(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	info, err := s.head(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	if opts.IfNoneMatch != "" && quote(opts.IfNoneMatch) == info.Version {
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotModified, nil)
	}
	return &objectstore.Object{ObjectInfo: info, Body: io.NopCloser(strings.NewReader(""))}, nil
}

func totalFromContentRange(cr string) (int64, error) {
	i := strings.LastIndexByte(cr, '/')
	if i < 0 {
		return 0, fmt.Errorf("objectstore: azblob: unexpected Content-Range %q", cr)
	}
	n, err := strconv.ParseInt(cr[i+1:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("objectstore: azblob: unexpected Content-Range %q", cr)
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
	p, err := s.cc.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return objectstore.ObjectInfo{}, s.readErr(op, key, err)
	}
	info := objectstore.ObjectInfo{Key: key, Version: etagOf(p.ETag), ModTime: timeOf(p.LastModified)}
	if p.ContentLength != nil {
		info.Size = *p.ContentLength
	}
	return info, nil
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
	opts := &blockblob.UploadOptions{}
	switch {
	case cond.IfAbsent:
		e := azcore.ETagAny
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &e}}
	case cond.IfMatch != "":
		if strings.Contains(cond.IfMatch, "*") || strings.HasPrefix(cond.IfMatch, "W/") {
			// "*" would match any blob; no blob has a weak ETag.
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed,
				fmt.Errorf("version %q is not an ETag", cond.IfMatch))
		}
		e := azcore.ETag(quote(cond.IfMatch))
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &e}}
	}
	sr := &onceBody{r: sized.NewReader(body, size), size: size}
	// One try: see the package documentation.
	tctx, wrote := sentTrace(policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1}))
	out, err := s.cc.NewBlockBlobClient(key).Upload(tctx, sr, opts)
	if err != nil {
		if e := sr.r.Err(); e != nil {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, e)
		}
		return objectstore.ObjectInfo{}, s.putErr(key, cond, wrote.Load(), err)
	}
	if e := sr.r.Err(); e != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, e)
	}
	info := objectstore.ObjectInfo{Key: key, Size: size, Version: etagOf(out.ETag), ModTime: timeOf(out.LastModified)}
	if info.ModTime.IsZero() {
		info.ModTime = time.Now()
	}
	return info, nil
}

// onceBody is a put's body as the SDK wants it, an io.ReadSeekCloser, without buffering
// it: it answers the SDK's seeks that find its length and rewind it before the first read,
// and refuses a rewind once read (which only a retry would ask for, and puts are not
// retried).
type onceBody struct {
	r    *sized.Reader
	size int64
	read bool
	pos  int64 // 0, or size after a seek to the end
}

func (b *onceBody) Read(p []byte) (int, error) {
	if b.pos != 0 {
		return 0, io.EOF
	}
	b.read = true
	return b.r.Read(p)
}

func (b *onceBody) Seek(offset int64, whence int) (int64, error) {
	if b.read {
		return 0, errors.New("objectstore: azblob: a put's body cannot be rewound")
	}
	switch {
	case offset == 0 && whence == io.SeekStart:
		b.pos = 0
	case offset == 0 && whence == io.SeekEnd:
		b.pos = b.size
	case offset == 0 && whence == io.SeekCurrent:
	default:
		return 0, fmt.Errorf("objectstore: azblob: unexpected seek (%d, %d) on a put's body", offset, whence)
	}
	return b.pos, nil
}

func (b *onceBody) Close() error { return nil }

// Delete implements Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, "delete", key); err != nil {
		return err
	}
	_, err := s.cc.NewBlobClient(key).Delete(ctx, nil)
	if err == nil || bloberror.HasCode(err, bloberror.BlobNotFound) {
		return nil
	}
	return s.readErr("delete", key, err)
}

// Close implements Store. It does not wait for operations in flight.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
