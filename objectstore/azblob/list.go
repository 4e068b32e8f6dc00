package azblob

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

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
	opts := &container.ListBlobsFlatOptions{}
	if p := validHead(prefix); p != "" {
		opts.Prefix = &p
	}
	marker, resumed := s.marker(prefix, startAfter)
	if resumed {
		opts.Marker = &marker
	} else if a := validHead(startAfter); a > prefix {
		opts.StartFrom = &a
	}
	maxResults := int32(limit)
	opts.MaxResults = &maxResults
	pager := s.cc.NewListBlobsFlatPager(opts)
	page := objectstore.ListPage{Objects: make([]objectstore.ObjectInfo, 0, min(limit, 64))}
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return objectstore.ListPage{}, s.readErr("list", prefix, err)
		}
		items := resp.Segment.BlobItems
		for i, it := range items {
			if it.Name == nil {
				continue
			}
			name := *it.Name
			if name <= startAfter || !strings.HasPrefix(name, prefix) {
				if name > prefix && name > startAfter && !strings.HasPrefix(name, prefix) {
					return page, nil // past the keys with prefix
				}
				continue
			}
			info := objectstore.ObjectInfo{Key: name}
			if p := it.Properties; p != nil {
				info.Version = etagOf(p.ETag)
				info.ModTime = timeOf(p.LastModified)
				if p.ContentLength != nil {
					info.Size = *p.ContentLength
				}
			}
			page.Objects = append(page.Objects, info)
			if len(page.Objects) == limit {
				last := i == len(items)-1
				if last && (resp.NextMarker == nil || *resp.NextMarker == "") {
					return page, nil
				}
				page.NextStartAfter = name
				if last {
					s.remember(prefix, name, *resp.NextMarker)
				}
				return page, nil
			}
		}
	}
	return page, nil
}

// marker returns the service's continuation marker for a listing of prefix after
// startAfter, when a page the store returned ended there at the end of a service page.
func (s *Store) marker(prefix, startAfter string) (string, bool) {
	if startAfter == "" {
		return "", false
	}
	s.markerMu.Lock()
	defer s.markerMu.Unlock()
	m, ok := s.markers[markerKey{prefix, startAfter}]
	return m, ok
}

func (s *Store) remember(prefix, after, marker string) {
	s.markerMu.Lock()
	defer s.markerMu.Unlock()
	k := markerKey{prefix, after}
	if _, ok := s.markers[k]; ok {
		return
	}
	if len(s.order) == maxMarkers {
		delete(s.markers, s.order[0])
		s.order = s.order[1:]
	}
	s.markers[k] = marker
	s.order = append(s.order, k)
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
