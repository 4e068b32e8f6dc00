package storeurl

import (
	"context"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// Open opens the store a URL names: mem://, file:///abs/dir (or a plain path) or
// s3://bucket/prefix?endpoint=...&region=...&path_style=true. Keys of the returned store live
// under the URL's prefix. Open creates a file store's directory if needed; it does not contact
// an S3 server (the first operation does).
func Open(ctx context.Context, rawURL string) (objectstore.Store, error) {
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
		ss, err := s3.New(ctx, loc.S3Config())
		if err != nil {
			return nil, err
		}
		s = ss
	}
	ps, err := objectstore.WithPrefix(s, loc.Prefix)
	if err != nil {
		s.Close()
		return nil, err
	}
	return ps, nil
}
