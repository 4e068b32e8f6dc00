//go:build unix

package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/objectstore"
)

// List implements Store.
func (s *Store) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	if s.closed.Load() {
		return objectstore.ListPage{}, objectstore.NewOpError("list", prefix, objectstore.ErrClosed, nil)
	}
	if err := ctx.Err(); err != nil {
		return objectstore.ListPage{}, objectstore.NewOpError("list", prefix, nil, err)
	}
	if err := s.rootGone("list", prefix); err != nil {
		return objectstore.ListPage{}, err
	}
	limit = objectstore.PageLimit(limit)
	// Start at the deepest directory the prefix names. If that part of the prefix cannot be
	// part of a valid key, nothing matches.
	base := prefix[:strings.LastIndex(prefix, "/")+1]
	if base != "" {
		if objectstore.ValidateKey(strings.TrimSuffix(base, "/")) != nil || base == fileTmpDirName+"/" || strings.HasPrefix(base, fileTmpDirName+"/") {
			return objectstore.ListPage{}, nil
		}
	}
	w := fileWalk{s: s, ctx: ctx, prefix: prefix, after: startAfter, want: limit + 1}
	if err := w.dir(base); err != nil {
		return objectstore.ListPage{}, err
	}
	page := objectstore.ListPage{Objects: w.out}
	if len(w.out) > limit {
		page.Objects = w.out[:limit]
		page.NextStartAfter = page.Objects[limit-1].Key
	}
	return page, nil
}

type fileWalk struct {
	s      *Store
	ctx    context.Context
	prefix string
	after  string
	want   int
	out    []objectstore.ObjectInfo
}

type fileEntry struct {
	sortKey string // the key of a file; the key prefix ("a/b/") of a directory
	dir     bool
}

// dir lists the directory for key prefix dirKey ("" or ending in "/") in byte order of the keys
// below it, pruning subtrees that cannot hold matching keys.
func (w *fileWalk) dir(dirKey string) error {
	if err := w.ctx.Err(); err != nil {
		return objectstore.NewOpError("list", w.prefix, nil, err)
	}
	entries, err := os.ReadDir(filepath.Join(w.s.root, filepath.FromSlash(dirKey)))
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return objectstore.NewOpError("list", w.prefix, nil, err)
	}
	ents := make([]fileEntry, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		if dirKey == "" && name == fileTmpDirName {
			continue
		}
		fe := fileEntry{sortKey: dirKey + name, dir: e.IsDir()}
		if fe.dir {
			fe.sortKey += "/"
		}
		ents = append(ents, fe)
	}
	slices.SortFunc(ents, func(a, b fileEntry) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, e := range ents {
		if len(w.out) >= w.want {
			return nil
		}
		if e.dir {
			p := e.sortKey
			if !strings.HasPrefix(p, w.prefix) && !strings.HasPrefix(w.prefix, p) {
				continue
			}
			if p < w.after && !strings.HasPrefix(w.after, p) {
				continue // every key below p sorts before startAfter
			}
			if err := w.dir(p); err != nil {
				return err
			}
			continue
		}
		key := e.sortKey
		if !strings.HasPrefix(key, w.prefix) || key <= w.after {
			continue
		}
		if err := objectstore.ValidateKey(key); err != nil {
			w.s.logger.Warn("objectstore: file store: skipping a file whose name is not a valid key", "path", filepath.Join(w.s.root, key), "err", err)
			continue
		}
		f, info, err := w.s.openObject("list", key)
		if errors.Is(err, objectstore.ErrNotFound) {
			continue // deleted since ReadDir
		}
		if err != nil {
			return err
		}
		f.Close()
		w.out = append(w.out, info)
	}
	return nil
}
