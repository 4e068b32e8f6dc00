//go:build unix

package file

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/internal/sized"
)

// Store is a Store on a directory; see the package documentation for its format and
// locking. It is safe for concurrent use by goroutines and by processes.
type Store struct {
	root    string
	tmpDir  string
	lockDir string
	noSync  bool
	logger  *slog.Logger
	closed  atomic.Bool
	stripes [fileLockStripes]sync.Mutex
}

const (
	fileTmpDirName  = ".sluice-tmp"
	fileLockStripes = 64
	fileHeaderLen   = 24
	fileFormat      = 1
	fileTmpMaxAge   = time.Hour
)

var fileMagic = [7]byte{'S', 'L', 'U', 'I', 'C', 'E', 'O'}

// Causes of failed conditional puts.
var (
	errExists          = errors.New("object exists")
	errVersionMismatch = errors.New("version does not match")
)

// New opens (creating if needed) a file store rooted at dir.
func New(dir string, opts ...Option) (*Store, error) {
	cfg := config{logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	var problems []error
	if dir == "" {
		problems = append(problems, errors.New("objectstore: file store: empty directory"))
	}
	if cfg.logger == nil {
		problems = append(problems, errors.New("objectstore: file store: nil logger"))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("objectstore: file store %q: %w", dir, err)
	}
	s := &Store{
		root:    root,
		tmpDir:  filepath.Join(root, fileTmpDirName),
		lockDir: filepath.Join(root, fileTmpDirName, "locks"),
		noSync:  cfg.noSync,
		logger:  cfg.logger,
	}
	if err := os.MkdirAll(s.lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("objectstore: file store %q: %w", dir, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("objectstore: file store %q: not a directory", dir)
	}
	s.removeStaleTemps()
	return s, nil
}

// Root returns the store's absolute root directory.
func (s *Store) Root() string { return s.root }

func (s *Store) removeStaleTemps() {
	entries, err := os.ReadDir(s.tmpDir)
	if err != nil {
		s.logger.Warn("objectstore: file store: reading temp dir", "err", err)
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "put-") {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < fileTmpMaxAge {
			continue
		}
		if err := os.Remove(filepath.Join(s.tmpDir, e.Name())); err == nil {
			s.logger.Info("objectstore: file store: removed stale temp file", "name", e.Name())
		}
	}
}

func (s *Store) check(op, key string) error {
	if s.closed.Load() {
		return objectstore.NewOpError(op, key, objectstore.ErrClosed, nil)
	}
	if err := objectstore.ValidateKey(key); err != nil {
		return objectstore.NewOpError(op, key, objectstore.ErrInvalidKey, err)
	}
	if key == fileTmpDirName || strings.HasPrefix(key, fileTmpDirName+"/") {
		return objectstore.NewOpError(op, key, objectstore.ErrInvalidKey, fmt.Errorf("%w: %q: the file store reserves the top-level name %q", objectstore.ErrInvalidKey, key, fileTmpDirName))
	}
	return nil
}

func (s *Store) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

// corruptError describes a malformed object file; openObject classes it as ErrCorrupt.
type corruptError string

func (e corruptError) Error() string { return string(e) }

// readFileHeader reads and checks the header of an open object file.
func readFileHeader(f *os.File) (version string, err error) {
	var h [fileHeaderLen]byte
	n, err := f.ReadAt(h[:], 0)
	if n < fileHeaderLen {
		if err == nil || errors.Is(err, io.EOF) {
			return "", corruptError(fmt.Sprintf("%s: %d bytes, shorter than the %d-byte header", f.Name(), n, fileHeaderLen))
		}
		return "", err
	}
	if !bytes.Equal(h[:7], fileMagic[:]) {
		return "", corruptError(fmt.Sprintf("%s: no object header (magic %q)", f.Name(), h[:7]))
	}
	if h[7] != fileFormat {
		return "", corruptError(fmt.Sprintf("%s: unknown format %d", f.Name(), h[7]))
	}
	return hex.EncodeToString(h[8:24]), nil
}

// openObject opens key's file and reads its info. It returns ErrNotFound (as the OpError kind)
// when there is no object file at key.
func (s *Store) openObject(op, key string) (*os.File, objectstore.ObjectInfo, error) {
	f, err := os.Open(s.path(key))
	if err != nil {
		if isNotExist(err) {
			if gone := s.rootGone(op, key); gone != nil {
				return nil, objectstore.ObjectInfo{}, gone
			}
			return nil, objectstore.ObjectInfo{}, objectstore.NewOpError(op, key, objectstore.ErrNotFound, nil)
		}
		return nil, objectstore.ObjectInfo{}, objectstore.NewOpError(op, key, nil, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, objectstore.ObjectInfo{}, objectstore.NewOpError(op, key, nil, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, objectstore.ObjectInfo{}, objectstore.NewOpError(op, key, objectstore.ErrNotFound, nil)
	}
	version, err := readFileHeader(f)
	if err != nil {
		f.Close()
		var ce corruptError
		if errors.As(err, &ce) {
			return nil, objectstore.ObjectInfo{}, objectstore.NewOpError(op, key, objectstore.ErrCorrupt, err)
		}
		return nil, objectstore.ObjectInfo{}, objectstore.NewOpError(op, key, nil, err)
	}
	return f, objectstore.ObjectInfo{Key: key, Size: fi.Size() - fileHeaderLen, Version: version, ModTime: fi.ModTime()}, nil
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

type fileBody struct {
	io.Reader
	f *os.File
}

func (b *fileBody) Close() error { return b.f.Close() }

// Get implements Store.
func (s *Store) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if err := s.check("get", key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, objectstore.NewOpError("get", key, nil, err)
	}
	f, info, err := s.openObject("get", key)
	if err != nil {
		return nil, err
	}
	if opts.IfNoneMatch != "" && opts.IfNoneMatch == info.Version {
		f.Close()
		return nil, objectstore.NewOpError("get", key, objectstore.ErrNotModified, nil)
	}
	off, n := opts.Range.Span(info.Size)
	return &objectstore.Object{ObjectInfo: info, Body: &fileBody{Reader: io.NewSectionReader(f, fileHeaderLen+off, n), f: f}}, nil
}

// Head implements Store.
func (s *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if err := s.check("head", key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("head", key, nil, err)
	}
	f, info, err := s.openObject("head", key)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	f.Close()
	return info, nil
}

func newVersion() ([16]byte, error) {
	var v [16]byte
	_, err := rand.Read(v[:])
	return v, err
}

// Put implements Store.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if err := s.check("put", key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	if err := cond.Validate(); err != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, err)
	}
	if size < 0 {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, sized.ErrNegative)
	}
	if err := ctx.Err(); err != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, err)
	}
	tmp, info, err := s.writeTemp(ctx, key, body, size)
	if err != nil {
		return objectstore.ObjectInfo{}, s.failure("put", key, err)
	}
	renamed := false
	defer func() {
		// After a rename the name is free and may belong to another put's temp file by now.
		if !renamed {
			os.Remove(tmp)
		}
	}()
	unlock, err := s.lock(key)
	if err != nil {
		return objectstore.ObjectInfo{}, s.failure("put", key, err)
	}
	defer unlock()
	final := s.path(key)
	if err := ctx.Err(); err != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, err)
	}
	if cond.IfMatch != "" {
		f, cur, err := s.openObject("put", key)
		if errors.Is(err, objectstore.ErrNotFound) {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, fmt.Errorf("%w: no object", errVersionMismatch))
		}
		if err != nil {
			return objectstore.ObjectInfo{}, err
		}
		f.Close()
		if cur.Version != cond.IfMatch {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, errVersionMismatch)
		}
	}
	publish := os.Rename
	if cond.IfAbsent {
		publish = os.Link
	}
	created, err := s.publish(key, tmp, final, publish)
	renamed = err == nil && !cond.IfAbsent
	if err != nil {
		if cond.IfAbsent && errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Lstat(final); serr == nil && !fi.IsDir() {
				return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrPreconditionFailed, errExists)
			}
		}
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.ENOTDIR) {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, fmt.Errorf("%w: %q: %v", ErrKeyConflict, key, err))
		}
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, err)
	}
	// The object is now published: a failure to make it durable is an unknown outcome.
	if err := s.syncDirs(filepath.Dir(final), created); err != nil {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, err)
	}
	return info, nil
}

// writeTemp writes the header and body to a synced temporary file and returns its path and the
// object's info.
func (s *Store) writeTemp(ctx context.Context, key string, body io.Reader, size int64) (path string, info objectstore.ObjectInfo, err error) {
	v, err := newVersion()
	if err != nil {
		return "", objectstore.ObjectInfo{}, err
	}
	f, err := os.CreateTemp(s.tmpDir, "put-*")
	if err != nil {
		return "", objectstore.ObjectInfo{}, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	var h [fileHeaderLen]byte
	copy(h[:], fileMagic[:])
	h[7] = fileFormat
	copy(h[8:], v[:])
	if _, err := f.Write(h[:]); err != nil {
		return "", objectstore.ObjectInfo{}, err
	}
	if _, err := io.Copy(f, sized.NewReader(body, size)); err != nil {
		return "", objectstore.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return "", objectstore.ObjectInfo{}, err
	}
	if !s.noSync {
		if err := f.Sync(); err != nil {
			return "", objectstore.ObjectInfo{}, err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return "", objectstore.ObjectInfo{}, err
	}
	if err := f.Close(); err != nil {
		return "", objectstore.ObjectInfo{}, err
	}
	return f.Name(), objectstore.ObjectInfo{Key: key, Size: size, Version: hex.EncodeToString(v[:]), ModTime: fi.ModTime()}, nil
}

// publish moves tmp to final with fn (rename or link), creating missing parent directories. It
// returns the directories it created, outermost first. A concurrent Delete of a neighbouring
// key may remove an empty parent between mkdir and publish, or between two mkdirs; publish
// then tries again (up to publishAttempts times).
func (s *Store) publish(key, tmp, final string, fn func(string, string) error) ([]string, error) {
	var created []string
	for attempt := 0; ; attempt++ {
		err := fn(tmp, final)
		if err == nil {
			return created, nil
		}
		if attempt < publishAttempts && (errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.EISDIR)) {
			// Directories where the object goes that hold no file (left by a failed put or
			// a crash) hold no key: remove them and try again. A file under them is a key,
			// and the conflict stands. A directory that vanishes meanwhile (a delete below
			// removes the directories it leaves empty) is one less to remove.
			fi, serr := os.Lstat(final)
			if serr == nil && fi.IsDir() {
				if rerr := removeEmptyTree(final); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
					continue
				}
			} else if errors.Is(serr, fs.ErrNotExist) {
				continue
			}
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == publishAttempts {
			return created, err
		}
		dirs, err := s.mkdirs(filepath.Dir(final))
		created = append(created, dirs...)
		if err != nil && (!errors.Is(err, fs.ErrNotExist) || attempt == publishAttempts) {
			return created, err
		}
	}
}

// removeEmptyTree removes dir and the directories below it, bottom up, if they hold nothing
// else; at the first entry that is not a directory (symbolic links included) it stops and
// fails, leaving what it has not removed.
func removeEmptyTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			return fmt.Errorf("%s: %w", filepath.Join(dir, e.Name()), syscall.ENOTEMPTY)
		}
		if err := removeEmptyTree(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return syscall.Rmdir(dir)
}

// publishAttempts bounds publish's retries when directories vanish under it: each needs a
// concurrent delete to empty and remove a directory in the instant between two steps.
const publishAttempts = 100

// mkdirs creates dir and its missing parents below the root, returning the ones it created.
func (s *Store) mkdirs(dir string) ([]string, error) {
	rel, err := filepath.Rel(s.root, dir)
	if err != nil || rel == "." {
		return nil, err
	}
	var created []string
	cur := s.root
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, seg)
		err := os.Mkdir(cur, 0o755)
		switch {
		case err == nil:
			created = append(created, cur)
		case errors.Is(err, fs.ErrExist):
			if fi, serr := os.Stat(cur); serr == nil && !fi.IsDir() {
				return created, fmt.Errorf("%s: %w", cur, syscall.ENOTDIR)
			}
		default:
			return created, err
		}
	}
	return created, nil
}

// syncDirs fsyncs dir and the parent of every directory in created.
func (s *Store) syncDirs(dir string, created []string) error {
	if s.noSync {
		return nil
	}
	dirs := []string{dir}
	for _, c := range created {
		dirs = append(dirs, filepath.Dir(c))
	}
	slices.Sort(dirs)
	for _, d := range slices.Compact(dirs) {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lock takes the in-process mutex and the cross-process flock of key's stripe.
func (s *Store) lock(key string) (unlock func(), err error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	i := h.Sum32() % fileLockStripes
	s.stripes[i].Lock()
	f, err := os.OpenFile(filepath.Join(s.lockDir, fmt.Sprintf("%02d", i)), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		s.stripes[i].Unlock()
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		s.stripes[i].Unlock()
		return nil, fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	return func() {
		// Closing the descriptor releases the flock.
		f.Close()
		s.stripes[i].Unlock()
	}, nil
}

// Delete implements Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check("delete", key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return objectstore.NewOpError("delete", key, nil, err)
	}
	unlock, err := s.lock(key)
	if err != nil {
		return s.failure("delete", key, err)
	}
	final := s.path(key)
	err = syscall.Unlink(final)
	if err == nil && !s.noSync {
		err = syncDir(filepath.Dir(final))
	}
	unlock()
	if err != nil && !isNotExist(err) && !errors.Is(err, syscall.EISDIR) && !errors.Is(err, syscall.EPERM) {
		return objectstore.NewOpError("delete", key, nil, err)
	}
	if err != nil && (errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EPERM)) {
		// Unlink of a directory: the key names a directory of other objects, not an object.
		if fi, serr := os.Lstat(final); serr != nil || !fi.IsDir() {
			return objectstore.NewOpError("delete", key, nil, err)
		}
		return nil
	}
	// Remove directories the delete left empty; rmdir fails harmlessly on a non-empty one.
	for dir := filepath.Dir(final); dir != s.root && strings.HasPrefix(dir, s.root); dir = filepath.Dir(dir) {
		if syscall.Rmdir(dir) != nil {
			break
		}
	}
	return nil
}

// Close implements Store. It does not wait for operations in flight.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
