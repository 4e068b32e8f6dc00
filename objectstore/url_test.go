package objectstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		in   string
		want objectstore.Location
	}{
		{"mem://", objectstore.Location{Scheme: "mem"}},
		{"mem://a/b/", objectstore.Location{Scheme: "mem", Prefix: "a/b"}},
		{"file:///var/lib/sluice", objectstore.Location{Scheme: "file", Dir: "/var/lib/sluice"}},
		{"file://localhost/x/y/", objectstore.Location{Scheme: "file", Dir: "/x/y"}},
		{"/abs/dir", objectstore.Location{Scheme: "file", Dir: "/abs/dir"}},
		{"./rel/../dir", objectstore.Location{Scheme: "file", Dir: "dir"}},
		{"rel/dir", objectstore.Location{Scheme: "file", Dir: "rel/dir"}},
		{"s3://bucket", objectstore.Location{Scheme: "s3", Bucket: "bucket", ReadTimeout: objectstore.DefaultS3ReadTimeout}},
		{"s3://my-bucket/streams/prod/", objectstore.Location{Scheme: "s3", Bucket: "my-bucket", Prefix: "streams/prod", ReadTimeout: objectstore.DefaultS3ReadTimeout}},
		{"s3://b.c.d/p?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true",
			objectstore.Location{Scheme: "s3", Bucket: "b.c.d", Prefix: "p", Endpoint: "http://127.0.0.1:7070", Region: "us-east-1", PathStyle: true, ReadTimeout: objectstore.DefaultS3ReadTimeout}},
		{"S3://bucket/a%20b?path_style=0", objectstore.Location{Scheme: "s3", Bucket: "bucket", Prefix: "a b", ReadTimeout: objectstore.DefaultS3ReadTimeout}},
		{"s3://bucket?read_timeout=10m", objectstore.Location{Scheme: "s3", Bucket: "bucket", ReadTimeout: 10 * time.Minute}},
		{"s3://bucket?read_timeout=0s", objectstore.Location{Scheme: "s3", Bucket: "bucket"}},
	}
	for _, c := range cases {
		got, err := objectstore.ParseURL(c.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseURL(%q) = %+v, want %+v", c.in, got, c.want)
		}
		back, err := objectstore.ParseURL(got.String())
		if err != nil || back != got {
			t.Errorf("ParseURL(%q).String() = %q parses to %+v, %v", c.in, got.String(), back, err)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	cases := []struct {
		in   string
		want []string // every one must appear in the message
	}{
		{"", []string{"empty URL"}},
		{"gs://bucket", []string{`unknown scheme "gs"`}},
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
		_, err := objectstore.ParseURL(c.in)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded", c.in)
			continue
		}
		if !errors.Is(err, objectstore.ErrInvalidURL) {
			t.Errorf("ParseURL(%q): %v does not match ErrInvalidURL", c.in, err)
		}
		var ue *objectstore.URLError
		if !errors.As(err, &ue) || len(ue.Problems) < len(c.want) {
			t.Errorf("ParseURL(%q): %v: want a *URLError with at least %d problems", c.in, err, len(c.want))
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseURL(%q): %q does not mention %q", c.in, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL(%q): error leaks the password: %v", c.in, err)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, u := range []string{"mem://", "mem://p/q", "file://" + dir, dir + "/plain", "file://" + dir + "/prefixed"} {
		s, err := objectstore.Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if _, err := objectstore.PutBytes(ctx, s, "k/v", []byte("x"), objectstore.IfAbsent()); err != nil {
			t.Fatalf("Open(%q): put: %v", u, err)
		}
		s.Close()
	}
	if _, err := objectstore.Open(ctx, "nope://x"); !errors.Is(err, objectstore.ErrInvalidURL) {
		t.Fatalf("Open of a bad URL: %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s, err := objectstore.Open(ctx, "s3://bucket/pre?endpoint=http://127.0.0.1:1&region=us-east-1&path_style=true")
	if err != nil {
		t.Fatalf("Open s3 (no contact expected): %v", err)
	}
	s.Close()
}

// Keys written through a prefixed store live under the prefix of the underlying store.
func TestWithPrefix(t *testing.T) {
	ctx := context.Background()
	inner := objectstore.NewMemStore()
	s, err := objectstore.WithPrefix(inner, "streams/x/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, s, "a/b", []byte("1"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, inner, "streams/xy", []byte("outside"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Head(ctx, "streams/x/a/b"); err != nil {
		t.Fatalf("inner key: %v", err)
	}
	page, err := s.List(ctx, "", "", 0)
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "a/b" {
		t.Fatalf("prefixed listing: %+v, %v", page, err)
	}
	for _, bad := range []string{"/x", "a//b", ".."} {
		if _, err := objectstore.WithPrefix(inner, bad); err == nil {
			t.Errorf("WithPrefix(%q) accepted", bad)
		}
	}
	if same, _ := objectstore.WithPrefix(inner, ""); same != objectstore.Store(inner) {
		t.Error("empty prefix should return the store itself")
	}
}

func TestPrefixConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		s, err := objectstore.WithPrefix(objectstore.NewMemStore(), "some/prefix")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"mem://", "mem://a/b", "file:///x/y", "/abs", "rel", "./r", "s3://bucket/p?endpoint=http://127.0.0.1:7070&region=us-east-1&path_style=true",
		"s3://", "s3://b?x=y", "s3://k:s@b/p", "file://h/x", "gs://b", "", "s3://b/a%2Fb", "s3://b/%00", "s3:b", "::::", "s3://b?endpoint=%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		loc, err := objectstore.ParseURL(raw)
		if err != nil {
			if !errors.Is(err, objectstore.ErrInvalidURL) {
				t.Fatalf("ParseURL(%q): %v does not match ErrInvalidURL", raw, err)
			}
			return
		}
		switch loc.Scheme {
		case "mem", "file", "s3":
		default:
			t.Fatalf("ParseURL(%q): scheme %q", raw, loc.Scheme)
		}
		if loc.Prefix != "" && objectstore.ValidateKey(loc.Prefix) != nil {
			t.Fatalf("ParseURL(%q): invalid prefix %q accepted", raw, loc.Prefix)
		}
		if loc.Scheme == "s3" && loc.Bucket == "" {
			t.Fatalf("ParseURL(%q): s3 without bucket", raw)
		}
		back, err := objectstore.ParseURL(loc.String())
		if err != nil || back != loc {
			t.Fatalf("ParseURL(%q) = %+v; String() = %q parses to %+v, %v", raw, loc, loc.String(), back, err)
		}
	})
}

// TestRedactURL: secrets in the user part or in query keys naming a secret, key, token or
// password are replaced; anything else comes back exactly as given (a URL without a host,
// "s3://", once came back as "s3:").
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3://": "s3://",
		"s3://bkt/p?region=eu-west-1&path_style=true": "s3://bkt/p?region=eu-west-1&path_style=true",
		"file:///tmp/x":                      "file:///tmp/x",
		"./sluice-data":                      "./sluice-data",
		"s3://user:pw@bkt/p":                 "s3://REDACTED@bkt/p",
		"s3://bkt/p?secret_key=abc&region=r": "s3://bkt/p?region=r&secret_key=REDACTED",
		"s3://bkt/p?Token=abc":               "s3://bkt/p?Token=REDACTED",
	} {
		if got := objectstore.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
