package storeurl_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want storeurl.Location
	}{
		{"mem://", storeurl.Location{Scheme: "mem"}},
		{"mem://a/b/", storeurl.Location{Scheme: "mem", Prefix: "a/b"}},
		{"file:///var/lib/sluice", storeurl.Location{Scheme: "file", Dir: "/var/lib/sluice"}},
		{"file://localhost/x/y/", storeurl.Location{Scheme: "file", Dir: "/x/y"}},
		{"/abs/dir", storeurl.Location{Scheme: "file", Dir: "/abs/dir"}},
		{"./rel/../dir", storeurl.Location{Scheme: "file", Dir: "dir"}},
		{"rel/dir", storeurl.Location{Scheme: "file", Dir: "rel/dir"}},
		{"s3://bucket", storeurl.Location{Scheme: "s3", Bucket: "bucket", ReadTimeout: s3.DefaultReadTimeout}},
		{"s3://my-bucket/streams/prod/", storeurl.Location{Scheme: "s3", Bucket: "my-bucket", Prefix: "streams/prod", ReadTimeout: s3.DefaultReadTimeout}},
		{"s3://b.c.d/p?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true",
			storeurl.Location{Scheme: "s3", Bucket: "b.c.d", Prefix: "p", Endpoint: "http://127.0.0.1:7070", Region: "us-east-1", PathStyle: true, ReadTimeout: s3.DefaultReadTimeout}},
		{"S3://bucket/a%20b?path_style=0", storeurl.Location{Scheme: "s3", Bucket: "bucket", Prefix: "a b", ReadTimeout: s3.DefaultReadTimeout}},
		{"s3://bucket?read_timeout=10m", storeurl.Location{Scheme: "s3", Bucket: "bucket", ReadTimeout: 10 * time.Minute}},
		{"s3://bucket?read_timeout=0s", storeurl.Location{Scheme: "s3", Bucket: "bucket"}},
		{"gs://my-bucket", storeurl.Location{Scheme: "gs", Bucket: "my-bucket"}},
		{"gs://my_bucket.example.com/streams/prod/", storeurl.Location{Scheme: "gs", Bucket: "my_bucket.example.com", Prefix: "streams/prod"}},
		{"azblob://sluice", storeurl.Location{Scheme: "azblob", Bucket: "sluice"}},
		{"azblob://sluice-data/p/q?account=acct1&endpoint=http://127.0.0.1:10000/acct1", storeurl.Location{Scheme: "azblob", Bucket: "sluice-data", Prefix: "p/q", Account: "acct1", Endpoint: "http://127.0.0.1:10000/acct1"}},
	}
	for _, c := range cases {
		got, err := storeurl.Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("Parse(%q) = %+v, want %+v", c.in, got, c.want)
		}
		back, err := storeurl.Parse(got.String())
		if err != nil || back != got {
			t.Errorf("Parse(%q).String() = %q parses to %+v, %v", c.in, got.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in   string
		want []string // every one must appear in the message
	}{
		{"", []string{"empty URL"}},
		{"gcs://bucket", []string{`unknown scheme "gcs"`}},
		{"gs://", []string{"missing bucket"}},
		{"gs://B/x", []string{"bucket name"}},
		{"gs://bucket?endpoint=http://x", []string{`unknown query parameter "endpoint" for gs://`}},
		{"azblob://", []string{"missing container"}},
		{"azblob://Bad_Name", []string{"container name"}},
		{"azblob://c0n?account=UPPER&endpoint=ftp://x&x=1", []string{"account name", "http or https", `unknown query parameter "x"`}},
		{"azblob://con/a\\b/..", []string{"not a valid key path"}},
		{"s3://", []string{"missing bucket"}},
		{"s3:///prefix", []string{"missing bucket"}},
		{"s3://B_ad!/x", []string{"bucket name"}},
		{"s3://bucket?endpoint=ftp://x", []string{"scheme must be http or https"}},
		{"s3://bucket?endpoint=http://", []string{"no host"}},
		{"s3://bucket?endpoint=:::", []string{"bad endpoint"}},
		{"s3://bucket?regoin=us-east-1", []string{`unknown query parameter "regoin"`}},
		{"s3://bucket?read_timeout=-1s", []string{`read_timeout="-1s"`}},
		{"s3://bucket?read_timeout=soon&regoin=x", []string{`read_timeout="soon": want a duration such as 2m`, `"regoin"`}},
		{"s3://bucket?path_style=yes", []string{`path_style="yes"`}},
		{"s3://bucket?region=a&region=b", []string{`"region" given 2 times`}},
		{"s3://key:secret@bucket/p", []string{"credentials in the URL"}},
		{"s3://bucket/a//b", []string{"not a valid key path"}},
		{"s3://bucket/a/../b", []string{"not a valid key path"}},
		{"file://host/x", []string{`host "host"`}},
		{"file://", []string{"missing directory"}},
		{"file:///x?sync=false", []string{`unknown query parameter "sync"`}},
		{"mem://?x=1", []string{`unknown query parameter "x"`}},
		{"s3:bucket", []string{`without "//"`}},
		// Several problems at once are all reported.
		{"s3://?regoin=x&endpoint=ftp://y&path_style=maybe", []string{"missing bucket", `"regoin"`, "http or https", "path_style"}},
	}
	for _, c := range cases {
		_, err := storeurl.Parse(c.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", c.in)
			continue
		}
		if !errors.Is(err, storeurl.ErrInvalidURL) {
			t.Errorf("Parse(%q): %v does not match ErrInvalidURL", c.in, err)
		}
		var ue *storeurl.URLError
		if !errors.As(err, &ue) || len(ue.Problems) < len(c.want) {
			t.Errorf("Parse(%q): %v: want a *URLError with at least %d problems", c.in, err, len(c.want))
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q): %q does not mention %q", c.in, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Parse(%q): error leaks the password: %v", c.in, err)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, u := range []string{"mem://", "mem://p/q", "file://" + dir, dir + "/plain", "file://" + dir + "/prefixed"} {
		s, err := storeurl.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if _, err := objectstore.PutBytes(ctx, s, "k/v", []byte("x"), objectstore.IfAbsent()); err != nil {
			t.Fatalf("Open(%q): put: %v", u, err)
		}
		s.Close()
	}
	if _, err := storeurl.Open(ctx, "nope://x"); !errors.Is(err, storeurl.ErrInvalidURL) {
		t.Fatalf("Open of a bad URL: %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s, err := storeurl.Open(ctx, "s3://bucket/pre?endpoint=http://127.0.0.1:1&region=us-east-1&path_style=true")
	if err != nil {
		t.Fatalf("Open s3 (no contact expected): %v", err)
	}
	s.Close()
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"mem://", "mem://a/b", "file:///x/y", "/abs", "rel", "./r", "s3://bucket/p?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true",
		"s3://", "s3://b?x=y", "s3://k:s@b/p", "file://h/x", "gs://b", "", "s3://b/a%2Fb", "s3://b/%00", "s3:b", "::::", "s3://b?endpoint=%zz", "gs://b-b/p", "azblob://c-c/p?account=a1b&endpoint=https://h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		loc, err := storeurl.Parse(raw)
		if err != nil {
			if !errors.Is(err, storeurl.ErrInvalidURL) {
				t.Fatalf("Parse(%q): %v does not match ErrInvalidURL", raw, err)
			}
			return
		}
		switch loc.Scheme {
		case "mem", "file", "s3", "gs", "azblob":
		default:
			t.Fatalf("Parse(%q): scheme %q", raw, loc.Scheme)
		}
		if loc.Prefix != "" && objectstore.ValidateKey(loc.Prefix) != nil {
			t.Fatalf("Parse(%q): invalid prefix %q accepted", raw, loc.Prefix)
		}
		if loc.Scheme == "s3" && loc.Bucket == "" {
			t.Fatalf("Parse(%q): s3 without bucket", raw)
		}
		back, err := storeurl.Parse(loc.String())
		if err != nil || back != loc {
			t.Fatalf("Parse(%q) = %+v; String() = %q parses to %+v, %v", raw, loc, loc.String(), back, err)
		}
	})
}

// TestRedact: secrets in the user part or in query keys naming a secret, key, token or
// password are replaced; anything else comes back exactly as given (a URL without a host,
// "s3://", once came back as "s3:").
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"s3://": "s3://",
		"s3://bkt/p?region=eu-west-1&path_style=true": "s3://bkt/p?region=eu-west-1&path_style=true",
		"file:///tmp/x":                      "file:///tmp/x",
		"./sluice-data":                      "./sluice-data",
		"s3://user:pw@bkt/p":                 "s3://REDACTED@bkt/p",
		"s3://bkt/p?secret_key=abc&region=r": "s3://bkt/p?region=r&secret_key=REDACTED",
		"s3://bkt/p?Token=abc":               "s3://bkt/p?Token=REDACTED",
	} {
		if got := storeurl.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
