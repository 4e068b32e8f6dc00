package s3

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Config configures New.
type Config struct {
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
	// Credentials, if set, replace the standard chain's (static keys from a Thanos bucket
	// config, for one).
	Credentials aws.CredentialsProvider
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
	// (the SDK's own default for S3); store URLs (package storeurl) use DefaultReadTimeout.
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

// New creates an S3 store. It loads credentials and region from the standard chain
// (environment, shared config files, instance roles) but does not contact the server.
func New(ctx context.Context, cfg Config) (*Store, error) {
	var problems []error
	if cfg.Bucket == "" {
		problems = append(problems, errors.New("objectstore: s3: missing bucket"))
	} else if err := ValidateBucket(cfg.Bucket); err != nil {
		problems = append(problems, err)
	}
	if cfg.Endpoint != "" {
		if err := ValidateEndpoint(cfg.Endpoint); err != nil {
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
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objectstore: s3: loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("objectstore: s3: no region: set region= in the URL, s3.Config.Region or AWS_REGION")
	}
	server := cfg.Endpoint
	if server == "" {
		server = "AWS S3"
	}
	watch := &keepAliveWatch{logger: logger, server: server}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.DisableLogOutputChecksumValidationSkipped = true
		o.APIOptions = append(o.APIOptions, unsignedAcceptEncoding, watch.middleware)
		if cfg.ReadTimeout > 0 {
			// Around the client the S3 client settled on: the SDK's own (with a custom CA
			// bundle and the defaults mode's connect timeouts applied) or HTTPClient.
			o.HTTPClient = &idleWatch{next: o.HTTPClient, timeout: cfg.ReadTimeout}
		}
	})
	return &Store{client: client, bucket: cfg.Bucket, logger: logger, httpCli: cfg.HTTPClient, condOK: cfg.TrustConditionalWrites, server: server}, nil
}

// DefaultReadTimeout is Config.ReadTimeout for stores opened from a URL without
// read_timeout: far longer than a healthy server stays silent within a request (it takes
// a put's body as it comes and answers once it has it, and sends a get's body as it reads
// it), short enough that a hung server fails requests within minutes.
const DefaultReadTimeout = 2 * time.Minute

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

func ValidateBucket(b string) error {
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

func ValidateEndpoint(e string) error {
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
