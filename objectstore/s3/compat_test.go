package s3_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
)

// sigV4Signature recomputes the SigV4 signature of r over the headers its Authorization lists,
// as a server does, with hdr as the request's headers. It runs in the server's goroutine, so
// it reports problems with t.Error, never t.Fatal.
func sigV4Signature(t *testing.T, r *http.Request, hdr http.Header) (got, want string) {
	t.Helper()
	auth := r.Header.Get("Authorization")
	var signed []string
	for _, part := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "SignedHeaders":
			signed = strings.Split(v, ";")
		case "Signature":
			got = v
		}
	}
	req, err := http.NewRequest(r.Method, "http://"+r.Host+r.RequestURI, nil)
	if err != nil {
		t.Error(err)
		return got, ""
	}
	req.Host = r.Host
	req.ContentLength = r.ContentLength
	for _, h := range signed {
		if h == "host" || h == "content-length" {
			continue
		}
		req.Header[http.CanonicalHeaderKey(h)] = hdr.Values(h)
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		t.Error(err)
		return got, ""
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	err = signer.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, req,
		r.Header.Get("X-Amz-Content-Sha256"), "s3", "us-east-1", when)
	if err != nil {
		t.Error(err)
		return got, ""
	}
	_, want, _ = strings.Cut(req.Header.Get("Authorization"), "Signature=")
	return got, want
}

// Google Cloud Storage's XML (S3 interoperability) API sits behind the Google Front End, which
// rewrites the Accept-Encoding request header (appending "gzip(gfe)") before GCS checks the
// signature. aws-sdk-go-v2 sets Accept-Encoding: identity and signs it, so every request
// fails with 403 SignatureDoesNotMatch unless Accept-Encoding is left out of the signature
// (aws/aws-sdk-go-v2#1816; the usual fix is a Finalize middleware that removes the header
// before "Signing" and restores it after).
func TestS3GCSAcceptEncodingRewrite(t *testing.T) {
	var controlOK atomic.Bool
	s, _ := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// Control: the signature verifies over the headers as the client sent them.
		if got, want := sigV4Signature(t, r, r.Header); got == want {
			controlOK.Store(true)
		}
		// What GCS sees after the front end.
		hdr := r.Header.Clone()
		if ae := hdr.Get("Accept-Encoding"); ae != "" {
			hdr.Set("Accept-Encoding", ae+",gzip(gfe)")
		}
		if got, want := sigV4Signature(t, r, hdr); got != want {
			s3Error(http.StatusForbidden, "SignatureDoesNotMatch")(w, r)
			return
		}
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	})
	_, err := objectstore.PutBytes(context.Background(), s, "streams/a%2Fb/manifest", []byte("body"), objectstore.IfAbsent())
	if !controlOK.Load() {
		t.Fatal("fake server's signature check is broken (control did not verify)")
	}
	if err != nil {
		t.Errorf("put through GCS's front end: %v", err)
	}
	if _, err := s.Head(context.Background(), "streams/a%2Fb/manifest"); err != nil {
		t.Errorf("head through GCS's front end: %v", err)
	}
}

// MinIO with several drives, after a conditional put was cut off, can answer an If-Match put
// with 404 NoSuchKey while HEAD and GET serve the very version it names. Taken for a
// conflict, that sent the manifest's writers round reload-and-retry without end and without
// a word; it is ErrInconsistent. A 404 for an object that is really gone (HEAD 404, or
// another version) stays a conflict.
func TestS3IfMatchNotFoundWhileServed(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		headETag string // "" for HEAD 404
		want     error
	}{
		{"served at that version", `"v1"`, objectstore.ErrInconsistent},
		{"served at another version", `"v2"`, objectstore.ErrPreconditionFailed},
		{"gone", "", objectstore.ErrPreconditionFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodHead && c.headETag != "":
					w.Header().Set("ETag", c.headETag)
					w.Header().Set("Content-Length", "4")
				case r.Method == http.MethodHead:
					w.WriteHeader(http.StatusNotFound)
				case r.Method == http.MethodPut && r.Header.Get("If-Match") != "":
					s3Error(http.StatusNotFound, "NoSuchKey")(w, r)
				default:
					io.Copy(io.Discard, r.Body)
					w.WriteHeader(http.StatusBadRequest)
				}
			})
			_, err := objectstore.PutBytes(ctx, s, "m", []byte("next"), objectstore.IfMatch(`"v1"`))
			if !errors.Is(err, c.want) {
				t.Fatalf("put: %v, want %v", err, c.want)
			}
			if c.want == objectstore.ErrInconsistent && errors.Is(err, objectstore.ErrPreconditionFailed) {
				t.Fatalf("put: %v also matches ErrPreconditionFailed (a conflict, retried)", err)
			}
		})
	}
}

// Limit 1 (the store asks for 2, TestS3ListOneKeyMinIO), the server (asked for 2) returns both keys that exist, IsTruncated false:
// the page must hold the first key and report more (NextStartAfter = that key); the next page
// holds the second and reports no more. Also with a start-after and with exactly one key.
func TestS3ListPageLimitOneTwoKeys(t *testing.T) {
	ctx := context.Background()
	var asked []string
	keys := []string{"p/a", "p/b"}
	plain := listServer(t, keys)
	s, _ := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Query().Get("max-keys"))
		plain(w, r)
	})
	page, err := s.List(ctx, "p/", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "p/a" || page.NextStartAfter != "p/a" {
		t.Fatalf("page 1: %+v next %q", page.Objects, page.NextStartAfter)
	}
	page, err = s.List(ctx, "p/", page.NextStartAfter, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "p/b" || page.NextStartAfter != "" {
		t.Fatalf("page 2: %+v next %q", page.Objects, page.NextStartAfter)
	}
	page, err = s.List(ctx, "p/", "p/b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 0 || page.NextStartAfter != "" {
		t.Fatalf("page 3: %+v next %q", page.Objects, page.NextStartAfter)
	}
	for _, a := range asked {
		if a == "1" {
			t.Fatalf("asked for max-keys=1: %q", asked)
		}
	}
}

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
