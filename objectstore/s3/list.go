package s3

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

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
	if utf8.ValidString(prefix) && utf8.ValidString(startAfter) {
		return s.listPage(ctx, prefix, prefix, startAfter, limit)
	}
	// Keys are valid UTF-8 (ValidateKey), but the contract takes any prefix and startAfter,
	// and some servers refuse what is not UTF-8 (SeaweedFS answers 500). Ask for their
	// valid parts and filter here: a prefix that ends part-way through a character matches
	// the keys that go on with it; one with a byte no character can continue with matches
	// none; a startAfter's valid part sorts at or before it.
	sendPrefix := validHead(prefix)
	if rest := prefix[len(sendPrefix):]; rest != "" && utf8.FullRuneInString(rest) {
		return objectstore.ListPage{}, nil
	}
	page := objectstore.ListPage{Objects: make([]objectstore.ObjectInfo, 0, limit)}
	cursor := validBelow(startAfter)
	if sendPrefix != prefix {
		// The prefix goes on with the lead byte of a character (0xC2 or above): keys that
		// go on from its valid part with an ASCII byte sort before it.
		cursor = max(cursor, sendPrefix+"\x7f")
	}
	for {
		// Full pages: the keys between the cursor and the wanted ones are skipped here.
		got, err := s.listPage(ctx, prefix, sendPrefix, cursor, objectstore.PageLimit(0))
		if err != nil {
			return objectstore.ListPage{}, err
		}
		for _, o := range got.Objects {
			switch {
			case strings.HasPrefix(o.Key, prefix) && o.Key > startAfter:
				if len(page.Objects) == limit {
					page.NextStartAfter = page.Objects[limit-1].Key
					return page, nil
				}
				page.Objects = append(page.Objects, o)
			case o.Key > prefix && !strings.HasPrefix(o.Key, prefix):
				return page, nil // past the keys with prefix, which sort together
			}
		}
		if got.NextStartAfter == "" {
			return page, nil
		}
		cursor = got.NextStartAfter
	}
}

// validBelow returns a valid UTF-8 string at or below s, close below it, for a listing
// after s to start from: s's valid part, then, where the byte after it cannot follow a
// character, the greatest character below that byte (DEL below a continuation byte,
// U+10FFFF below 0xF5 and up), so that the keys that go on from the valid part with a
// smaller byte are not asked for.
func validBelow(s string) string {
	v := validHead(s)
	if v == s {
		return s
	}
	switch c := s[len(v)]; {
	case c < 0xC2:
		return v + "\x7f"
	case c > 0xF4:
		return v + string(utf8.MaxRune)
	}
	return v
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

// listPage is one ListObjectsV2 call: up to limit keys starting with sendPrefix after
// startAfter (the caller's prefix names the operation in errors).
//
// It never asks for a single key: MinIO answers max-keys=1 with a prefix and no start-after
// by looking the prefix up as a key, and when that object exists returns it alone as a
// complete listing (IsTruncated false), dropping every other key under the prefix. It asks
// for two instead and keeps the first.
func (s *Store) listPage(ctx context.Context, prefix, sendPrefix, startAfter string, limit int) (objectstore.ListPage, error) {
	ask := max(limit, 2)
	in := &awss3.ListObjectsV2Input{Bucket: &s.bucket, MaxKeys: aws.Int32(int32(ask))}
	if sendPrefix != "" {
		in.Prefix = aws.String(sendPrefix)
	}
	if startAfter != "" {
		in.StartAfter = aws.String(startAfter)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return objectstore.ListPage{}, s.readErr("list", prefix, err)
	}
	page := objectstore.ListPage{Objects: make([]objectstore.ObjectInfo, 0, len(out.Contents))}
	for _, o := range out.Contents {
		page.Objects = append(page.Objects, objectstore.ObjectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Version: aws.ToString(o.ETag), ModTime: aws.ToTime(o.LastModified)})
	}
	if len(page.Objects) > ask {
		return objectstore.ListPage{}, objectstore.NewOpError("list", prefix, nil, fmt.Errorf("server returned %d keys for max-keys %d", len(page.Objects), ask))
	}
	if len(page.Objects) > limit {
		page.Objects = page.Objects[:limit]
		page.NextStartAfter = page.Objects[limit-1].Key
		return page, nil
	}
	if aws.ToBool(out.IsTruncated) {
		if len(page.Objects) == 0 {
			return objectstore.ListPage{}, objectstore.NewOpError("list", prefix, nil, errors.New("server returned an empty truncated page"))
		}
		page.NextStartAfter = page.Objects[len(page.Objects)-1].Key
	}
	return page, nil
}
