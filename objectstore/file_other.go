//go:build !unix

package objectstore

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

// FileStore is only available on Unix systems (it relies on flock(2) and link(2)).
type FileStore struct{}

var errFileUnsupported = fmt.Errorf("objectstore: the file store is not supported on %s", runtime.GOOS)

// NewFileStore fails on this platform.
func NewFileStore(dir string, opts ...FileOption) (*FileStore, error) {
	return nil, errFileUnsupported
}

// Root returns "".
func (s *FileStore) Root() string { return "" }

func (s *FileStore) Get(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	return nil, errFileUnsupported
}
func (s *FileStore) Head(ctx context.Context, key string) (ObjectInfo, error) {
	return ObjectInfo{}, errFileUnsupported
}
func (s *FileStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	return ObjectInfo{}, errFileUnsupported
}
func (s *FileStore) Delete(ctx context.Context, key string) error { return errFileUnsupported }
func (s *FileStore) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	return ListPage{}, errFileUnsupported
}
func (s *FileStore) Close() error { return nil }
