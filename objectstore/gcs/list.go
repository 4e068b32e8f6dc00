package gcs

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

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
	limit = objectstore.PageLimit(limit)
	// Keys are valid UTF-8; a prefix or startAfter that is not cannot be sent. Ask for
	// their valid parts and filter here.
	sendPrefix, sendAfter := validHead(prefix), validHead(startAfter)
	if startAfter < prefix && strings.HasPrefix(prefix, sendAfter) {
		sendAfter = "" // the prefix alone bounds the listing
	}
	q := &storage.Query{Prefix: sendPrefix, StartOffset: sendAfter}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated"}); err != nil {
		return objectstore.ListPage{}, objectstore.NewOpError("list", prefix, nil, err)
	}
	it := s.bkt.Objects(ctx, q)
	it.PageInfo().MaxSize = min(limit+1, 1000)
	page := objectstore.ListPage{Objects: make([]objectstore.ObjectInfo, 0, min(limit, 64))}
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return page, nil
		}
		if err != nil {
			if status(err) == http.StatusNotFound && !noBucket(err) && s.bucketGone(ctx) {
				return objectstore.ListPage{}, objectstore.NewOpError("list", prefix, objectstore.ErrNoBucket, err)
			}
			return objectstore.ListPage{}, s.readErr("list", prefix, err)
		}
		if a.Name <= startAfter || !strings.HasPrefix(a.Name, prefix) {
			if a.Name > prefix && !strings.HasPrefix(a.Name, prefix) && a.Name > startAfter {
				return page, nil // past the keys with prefix
			}
			continue
		}
		if len(page.Objects) == limit {
			page.NextStartAfter = page.Objects[limit-1].Key
			return page, nil
		}
		page.Objects = append(page.Objects, attrsInfo(a))
	}
}

// validHead returns the longest prefix of s that is valid UTF-8.
func validHead(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return s[:i]
		}
		i += n
	}
	return s
}
