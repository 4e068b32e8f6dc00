//go:build unix

package file

import (
	"errors"
	"fmt"
	"os"

	"github.com/sluice-dev/sluice/objectstore"
)

// ErrRootMissing is the cause of a file store's errors once its directory (or the
// .sluice-tmp directory in it) is gone, removed under a running process. Their kind is
// objectstore.ErrNoBucket: the store itself is missing, which is never to be taken for a missing object.
var ErrRootMissing = errors.New("file: the store's directory is missing")

// rootGone returns op's error on key if the store's directory is gone, else nil.
func (s *Store) rootGone(op, key string) error {
	if _, err := os.Stat(s.lockDir); err != nil && isNotExist(err) {
		return objectstore.NewOpError(op, key, objectstore.ErrNoBucket, fmt.Errorf("%w: %s (or its %s)", ErrRootMissing, s.root, fileTmpDirName))
	}
	return nil
}

// failure is op's plain failure on key with cause err, or rootGone's error if the store's
// directory is gone (the likely cause of err then).
func (s *Store) failure(op, key string, err error) error {
	if gone := s.rootGone(op, key); gone != nil {
		return gone
	}
	return objectstore.NewOpError(op, key, nil, err)
}
