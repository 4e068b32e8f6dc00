//go:build unix

package objectstore

import (
	"errors"
	"fmt"
	"os"
)

// ErrRootMissing is the cause of a file store's errors once its directory (or the
// .sluice-tmp directory in it) is gone, removed under a running process. Their kind is
// ErrNoBucket: the store itself is missing, which is never to be taken for a missing object.
var ErrRootMissing = errors.New("objectstore: the file store's directory is missing")

// rootGone returns op's error on key if the store's directory is gone, else nil.
func (s *FileStore) rootGone(op, key string) error {
	if _, err := os.Stat(s.lockDir); err != nil && isNotExist(err) {
		return NewOpError(op, key, ErrNoBucket, fmt.Errorf("%w: %s (or its %s)", ErrRootMissing, s.root, fileTmpDirName))
	}
	return nil
}

// failure is op's plain failure on key with cause err, or rootGone's error if the store's
// directory is gone (the likely cause of err then).
func (s *FileStore) failure(op, key string, err error) error {
	if gone := s.rootGone(op, key); gone != nil {
		return gone
	}
	return NewOpError(op, key, nil, err)
}
