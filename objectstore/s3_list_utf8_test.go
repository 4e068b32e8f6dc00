package objectstore_test

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
