//go:build !unix

package file

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/sluice-dev/sluice/objectstore"
)

// Store is only available on Unix systems (it relies on flock(2) and link(2)).
type Store struct{}

var errFileUnsupported = fmt.Errorf("objectstore: the file store is not supported on %s", runtime.GOOS)

// New fails on this platform.
func New(dir string, opts ...Option) (*Store, error) {
	return nil, errFileUnsupported
}

// Root returns "".
func (s *Store) Root() string { return "" }

func (s *Store) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	return nil, errFileUnsupported
}
func (s *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	return objectstore.ObjectInfo{}, errFileUnsupported
}
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	return objectstore.ObjectInfo{}, errFileUnsupported
}
func (s *Store) Delete(ctx context.Context, key string) error { return errFileUnsupported }
func (s *Store) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	return objectstore.ListPage{}, errFileUnsupported
}
func (s *Store) Close() error { return nil }
