package s3_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// listServer answers ListObjectsV2 over keys as S3 does, and refuses (500 InternalError) a
// prefix or start-after that is not valid UTF-8, as SeaweedFS does.
func listServer(t *testing.T, keys []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		prefix, after := q.Get("prefix"), q.Get("start-after")
		if !utf8.ValidString(prefix) || !utf8.ValidString(after) {
			s3Error(http.StatusInternalServerError, "InternalError")(w, r)
			return
		}
		max, err := strconv.Atoi(q.Get("max-keys"))
		if err != nil || max <= 0 {
			max = 1000
		}
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name>`)
		n, truncated := 0, false
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix) || k <= after {
				continue
			}
			if n == max {
				truncated = true
				break
			}
			n++
			b.WriteString("<Contents><Key>")
			xml.EscapeText(&b, []byte(k))
			fmt.Fprintf(&b, `</Key><Size>1</Size><ETag>"e"</ETag><LastModified>2026-01-02T03:04:05.000Z</LastModified></Contents>`)
		}
		fmt.Fprintf(&b, "<KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys><IsTruncated>%v</IsTruncated></ListBucketResult>", n, max, truncated)
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(b.String()))
	}
}

// TestS3ListInvalidUTF8 lists with prefixes and start-after values cut in the middle of a
// character, or holding bytes no key can hold, from a server that refuses them: keys are
// valid UTF-8, so the store asks for their valid part and filters, or knows that nothing
// matches, and answers as the Store contract says for any string.
func TestS3ListInvalidUTF8(t *testing.T) {
	keys := []string{"a/b", "a/é", "a/é/x", "a/éa", "a/ê", "a/世", "a/世界", "a/世界/z", "a/z", "b/ä", "b/äb", "c", "é"}
	slices.Sort(keys)
	s, _ := fakeS3(t, listServer(t, keys))
	r := rand.New(rand.NewPCG(testseed.Get(t), 1))
	probes := []string{"", "a/\xc3", "a/\xe4\xb8", "a/\xe4", "\xc3", "a/\xff", "a/\xc3a", "b/\xc3\xa4\xc3", "z\x80"}
	for range 25 {
		k := keys[r.IntN(len(keys))]
		probes = append(probes, k[:r.IntN(len(k)+1)])
	}
	ctx := context.Background()
	for _, prefix := range probes {
		for _, after := range probes {
			limit := r.IntN(4)
			var got []string
			cursor := after
			for pages := 0; ; pages++ {
				if pages > len(keys)+1 {
					t.Fatalf("prefix %q after %q: no end after %d pages", prefix, after, pages)
				}
				page, err := s.List(ctx, prefix, cursor, limit)
				if err != nil {
					t.Fatalf("list prefix %q after %q: %v", prefix, cursor, err)
				}
				for _, o := range page.Objects {
					got = append(got, o.Key)
				}
				if page.NextStartAfter == "" {
					break
				}
				cursor = page.NextStartAfter
			}
			var want []string
			for _, k := range keys {
				if strings.HasPrefix(k, prefix) && k > after {
					want = append(want, k)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("list prefix %q after %q limit %d:\n got %q\nwant %q", prefix, after, limit, got, want)
			}
		}
	}
}

// TestS3ListInvalidUTF8Random lists with random prefixes and start-after values built
// from key bytes and stray bytes, against the contract, over every limit.
func TestS3ListInvalidUTF8Random(t *testing.T) {
	keys := []string{"a", "a/b", "a/é", "a/é/x", "a/éa", "a/ê", "a/世", "a/世界", "a/世界/z", "a/z", "a/\U0001F600", "a/\U0001F600x", "b/ä", "b/äb", "c", "é", "\U0010FFFF", "\uFFFD"}
	slices.Sort(keys)
	s, _ := fakeS3(t, listServer(t, keys))
	r := rand.New(rand.NewPCG(testseed.Get(t), 9))
	strs := func() string {
		k := keys[r.IntN(len(keys))]
		p := k[:r.IntN(len(k)+1)]
		if r.IntN(2) == 0 {
			p += string([]byte{byte(0x80 + r.IntN(0x80))})
		}
		return p
	}
	ctx := context.Background()
	for range 3000 {
		prefix, after := strs(), strs()
		limit := 1 + r.IntN(3)
		var want []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) && k > after {
				want = append(want, k)
			}
		}
		page, err := s.List(ctx, prefix, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range page.Objects {
			got = append(got, o.Key)
		}
		n := min(limit, len(want))
		if !slices.Equal(got, want[:n]) {
			t.Fatalf("prefix %q after %q limit %d: got %q want %q", prefix, after, limit, got, want[:n])
		}
		if len(want) > limit && page.NextStartAfter == "" {
			t.Fatalf("prefix %q after %q limit %d: NextStartAfter empty with %q left", prefix, after, limit, want[n:])
		}
		if page.NextStartAfter != "" && page.NextStartAfter != got[len(got)-1] {
			t.Fatalf("NextStartAfter %q, last %q", page.NextStartAfter, got[len(got)-1])
		}
	}
}

// TestS3ListInvalidUTF8Requests bounds the requests of a filtered listing: catalog.ListBasins
// lists with limit 1 and passes an API client's prefix and start_after through, and a prefix
// cut part-way through a character, or a start_after holding a byte no key can hold, must
// not cost a request per key in the way (full pages, and a cursor past the keys that sort
// before the wanted ones).
func TestS3ListInvalidUTF8Requests(t *testing.T) {
	var keys []string
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("basins/b%03d/s/data/%d", i/10, i))
	}
	keys = append(keys, "basins/é/basin")
	slices.Sort(keys)
	s, n := fakeS3(t, listServer(t, keys))
	ctx := context.Background()
	for _, c := range []struct{ prefix, after string }{
		{"basins/\xc3", "basins/"},           // ListBasins(prefix="\xc3")
		{"basins/", "basins/b000\xff/basin"}, // ListBasins(startAfter="b000\xff"): walks basin b000's objects
	} {
		n.Store(0)
		page, err := s.List(ctx, c.prefix, c.after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Objects) != 1 {
			t.Fatalf("%q after %q: %d objects", c.prefix, c.after, len(page.Objects))
		}
		if got := n.Load(); got > 3 {
			t.Errorf("List(%q, after %q, limit 1) made %d requests to skip %d keys", c.prefix, c.after, got, len(keys))
		}
	}
}
