package s3_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// minioListServer is listServer with MinIO's shortcut for max-keys=1 (cmd/erasure-server-pool.go,
// ListObjects): a listing with a prefix, max-keys=1 and no marker (start-after or continuation
// token) looks the prefix up as a key, and when that object exists answers with it alone and
// IsTruncated false, whatever else the prefix holds. singles counts the listings asking for
// one key.
func minioListServer(t *testing.T, keys []string, singles *atomic.Int64) http.HandlerFunc {
	plain := listServer(t, keys)
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("max-keys") == "1" {
			singles.Add(1)
			prefix := q.Get("prefix")
			if prefix != "" && q.Get("start-after") == "" && q.Get("continuation-token") == "" && slices.Contains(keys, prefix) {
				listServer(t, []string{prefix})(w, r)
				return
			}
		}
		plain(w, r)
	}
}

// TestS3ListOneKeyMinIO lists one key a page where the prefix is itself a key, on a server
// that answers such a listing as MinIO does: the store must still page through every key
// under the prefix (found against MinIO: the conformance suite's ListOrder listed only
// "l1/a/b" of "l1/a/b", "l1/a/b-c" and "l1/a/b0").
func TestS3ListOneKeyMinIO(t *testing.T) {
	ctx := context.Background()
	keys := []string{"a", "a/b", "a/b-c", "a/b/c", "a/b0", "a/c", "b"}
	var singles atomic.Int64
	s, _ := fakeS3(t, minioListServer(t, keys, &singles))
	for _, prefix := range []string{"a", "a/b", "a/b/c", "a/c", ""} {
		for _, after := range []string{"", "a/b"} {
			var want []string
			for _, k := range keys {
				if strings.HasPrefix(k, prefix) && k > after {
					want = append(want, k)
				}
			}
			var got []string
			cursor := after
			for pages := 0; ; pages++ {
				if pages > len(keys) {
					t.Fatalf("prefix %q after %q: no end after %d pages (got %q)", prefix, after, pages, got)
				}
				page, err := s.List(ctx, prefix, cursor, 1)
				if err != nil {
					t.Fatalf("list %q after %q: %v", prefix, cursor, err)
				}
				if len(page.Objects) > 1 {
					t.Fatalf("list %q after %q limit 1: %d objects", prefix, cursor, len(page.Objects))
				}
				for _, o := range page.Objects {
					got = append(got, o.Key)
				}
				if page.NextStartAfter == "" {
					break
				}
				if len(page.Objects) == 0 || page.NextStartAfter != page.Objects[0].Key {
					t.Fatalf("list %q after %q: NextStartAfter %q is not the page's key (%q)", prefix, cursor, page.NextStartAfter, got)
				}
				cursor = page.NextStartAfter
			}
			if !slices.Equal(got, want) {
				t.Errorf("list prefix %q after %q one key a page:\n got %q\nwant %q", prefix, after, got, want)
			}
		}
	}
	if n := singles.Load(); n != 0 {
		t.Errorf("the store sent %d listings with max-keys=1", n)
	}
}
