package storeurl

import (
	"context"
	"log/slog"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/azblob"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// Open opens the store a URL names: mem://, file:///abs/dir (or a plain path) or
// s3://bucket/prefix?endpoint=...&region=...&path_style=true. Keys of the returned store live
// under the URL's prefix. Open creates a file store's directory if needed; it does not contact
// an S3 server (the first operation does).
func Open(ctx context.Context, rawURL string, opts ...Option) (objectstore.Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if data, ok, err := thanosFromURL(rawURL); ok {
		if err != nil {
			return nil, err
		}
		return OpenThanos(ctx, data, opts...)
	}
	loc, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var s objectstore.Store
	switch loc.Scheme {
	case "mem":
		s = objectstore.NewMemStore()
	case "file":
		fs, err := file.New(loc.Dir)
		if err != nil {
			return nil, err
		}
		s = fs
	case "s3":
		cfg := loc.S3Config()
		cfg.Logger = o.logger
		ss, err := s3.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s = ss
	case "gs":
		gs, err := openGCS(ctx, loc, o.logger)
		if err != nil {
			return nil, err
		}
		s = gs
	case "azblob":
		cfg := loc.AzureConfig()
		cfg.Logger = o.logger
		as, err := azblob.New(cfg)
		if err != nil {
			return nil, err
		}
		s = as
	}
	ps, err := objectstore.WithPrefix(s, loc.Prefix)
	if err != nil {
		s.Close()
		return nil, err
	}
	return ps, nil
}

// Option configures Open.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger is where the store logs what an operator should know of the server (an S3
// server that ignores conditional writes' versions, or closes every connection). Without
// it, nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }
