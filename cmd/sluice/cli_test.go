package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/s3"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/stream"
)

// backend is a store the end-to-end tests run every command against.
type backend struct {
	name string
	// args select the store (nil: the default ./sluice-data in the test's directory).
	args []string
}

// backends returns the file store (the default URL, in a temporary directory) and, when
// SLUICE_TEST_S3_URL is set, the S3 server under a prefix unique to the test. With CI=true a
// missing SLUICE_TEST_S3_URL fails the test.
func backends(t *testing.T) []backend {
	t.Helper()
	bs := []backend{{name: "file"}}
	raw := os.Getenv("SLUICE_TEST_S3_URL")
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SLUICE_TEST_S3_URL is not set and CI=true: the S3 end-to-end tests must run (use scripts/test.sh)")
		}
		t.Log("SLUICE_TEST_S3_URL not set: S3 runs skipped")
		return bs
	}
	return append(bs, backend{name: "s3", args: []string{"--store", s3TestURL(t, raw)}})
}

// s3TestURL makes sure the bucket of raw exists and returns raw with a prefix unique to t;
// everything under that prefix is deleted when t ends.
func s3TestURL(t *testing.T, raw string) string {
	t.Helper()
	loc, err := storeurl.Parse(raw)
	if err != nil || loc.Scheme != "s3" {
		t.Fatalf("SLUICE_TEST_S3_URL=%q: want an s3:// URL (%v)", raw, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, err := s3.New(ctx, loc.S3Config())
	if err != nil {
		t.Fatal(err)
	}
	if err := base.EnsureBucket(ctx); err != nil {
		t.Fatalf("bucket %q: %v", loc.Bucket, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := strings.Trim(loc.Prefix+"/cli-"+strings.ReplaceAll(t.Name(), "/", "_")+"-"+hex.EncodeToString(b[:]), "/")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := objectstore.ListAll(ctx, base, prefix+"/", func(o objectstore.ObjectInfo) error {
			return base.Delete(ctx, o.Key)
		}); err != nil {
			t.Errorf("cleaning up %s: %v", prefix, err)
		}
		_ = base.Close()
	})
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + prefix
	return u.String()
}

// cli runs the binary for one backend in one directory.
type cli struct {
	t   *testing.T
	dir string
	b   backend
	env []string
}

func newCLI(t *testing.T, b backend) *cli {
	return &cli{t: t, dir: t.TempDir(), b: b}
}

// run runs sluice with the backend's store flags after args.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	if i := slices.Index(args, "--"); i >= 0 { // the backend's flags go before the operands
		return sluice(c.t, c.dir, stdin, c.env, slices.Concat(args[:i], c.b.args, args[i:])...)
	}
	return sluice(c.t, c.dir, stdin, c.env, append(args, c.b.args...)...)
}

// ok runs sluice and fails the test unless it exits 0.
func (c *cli) ok(stdin string, args ...string) result {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != 0 {
		c.t.Fatalf("sluice %v: exit %d\nstderr: %s", args, r.code, r.stderr)
	}
	return r
}

// fails runs sluice and fails the test unless it exits non-zero with stderr naming every want.
func (c *cli) fails(stdin string, wants []string, args ...string) result {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code == 0 {
		c.t.Fatalf("sluice %v: exit 0, want failure naming %q\nstdout: %s", args, wants, r.stdout)
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			c.t.Fatalf("sluice %v: exit %d, stderr %q does not name %q", args, r.code, r.stderr, w)
		}
	}
	return r
}

type pos struct {
	SeqNum    uint64 `json:"seq_num"`
	Timestamp uint64 `json:"timestamp"`
}

type ack struct {
	Start, End, Tail pos
}

// jsonLines decodes every line of out into a T.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var vs []T
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("output line %d %q: %v", i+1, line, err)
		}
		vs = append(vs, v)
	}
	return vs
}

func decodeJSON[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	return v
}

// checkAcks checks that acks cover [from, from+n) contiguously, in order, each append holding
// 1 to 1000 records, timestamps non-decreasing.
func checkAcks(t *testing.T, acks []ack, from, n uint64) {
	t.Helper()
	next := from
	var lastTS uint64
	for i, a := range acks {
		if a.Start.SeqNum != next || a.End.SeqNum <= a.Start.SeqNum || a.End.SeqNum-a.Start.SeqNum > 1000 {
			t.Fatalf("ack %d = %+v: want start %d and 1..1000 records", i, a, next)
		}
		if a.Start.Timestamp < lastTS || a.End.Timestamp < a.Start.Timestamp || a.Tail.SeqNum < a.End.SeqNum {
			t.Fatalf("ack %d = %+v: timestamps or tail out of order", i, a)
		}
		next, lastTS = a.End.SeqNum, a.End.Timestamp
	}
	if next != from+n {
		t.Fatalf("acks end at %d, want %d (%d acks)", next, from+n, len(acks))
	}
}

func forEachBackend(t *testing.T, fn func(t *testing.T, c *cli)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { fn(t, newCLI(t, b)) })
	}
}

type streamInfo struct {
	Stream string `json:"stream"`
	Config struct {
		RetentionPolicy struct {
			Age      *uint64   `json:"age"`
			Infinite *struct{} `json:"infinite"`
		} `json:"retention_policy"`
		Timestamping struct {
			Mode     string `json:"mode"`
			Uncapped bool   `json:"uncapped"`
		} `json:"timestamping"`
		DeleteOnEmpty struct {
			MinAgeSecs uint64 `json:"min_age_secs"`
		} `json:"delete_on_empty"`
		QueueMode bool `json:"queue_mode"`
	} `json:"config"`
}

func TestStreamLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		info := decodeJSON[streamInfo](t, c.ok("", "stream", "create", "logs", "--retention-age", "7d", "--timestamping-mode", "arrival", "--delete-on-empty-min-age", "1h").stdout)
		if info.Config.RetentionPolicy.Age == nil || *info.Config.RetentionPolicy.Age != 7*86400 ||
			info.Config.Timestamping.Mode != "arrival" || info.Config.DeleteOnEmpty.MinAgeSecs != 3600 {
			t.Fatalf("created config = %+v", info.Config)
		}
		c.fails("", []string{"already exists", `"logs"`}, "stream", "create", "logs")
		// Names that share a prefix or hold a slash are distinct streams.
		for _, n := range []string{"a", "a/data", "b.c", "ü"} {
			c.ok("", "stream", "create", n)
		}
		names := jsonLines[map[string]string](t, c.ok("", "stream", "list").stdout)
		got := []string{}
		for _, n := range names {
			got = append(got, n["name"])
		}
		if strings.Join(got, ",") != "a,a/data,b.c,logs,ü" {
			t.Fatalf("stream list = %q", got)
		}
		if n := jsonLines[map[string]string](t, c.ok("", "stream", "list", "--prefix", "a").stdout); len(n) != 2 {
			t.Fatalf("stream list --prefix a = %v", n)
		}
		if n := jsonLines[map[string]string](t, c.ok("", "stream", "list", "--limit", "1").stdout); len(n) != 1 || n[0]["name"] != "a" {
			t.Fatalf("stream list --limit 1 = %v", n)
		}

		// config: show, change one setting, keep the others.
		info = decodeJSON[streamInfo](t, c.ok("", "stream", "config", "logs").stdout)
		if info.Config.Timestamping.Mode != "arrival" {
			t.Fatalf("config = %+v", info.Config)
		}
		info = decodeJSON[streamInfo](t, c.ok("", "stream", "config", "logs", "--retention-infinite", "--timestamping-uncapped").stdout)
		if info.Config.RetentionPolicy.Infinite == nil || info.Config.RetentionPolicy.Age != nil ||
			!info.Config.Timestamping.Uncapped || info.Config.Timestamping.Mode != "arrival" || info.Config.DeleteOnEmpty.MinAgeSecs != 3600 {
			t.Fatalf("reconfigured = %+v", info.Config)
		}
		ins := decodeJSON[inspectJSON](t, c.ok("", "inspect", "logs").stdout)
		if ins.Config.RetentionPolicy.Infinite == nil || ins.WriteCounter < 2 {
			t.Fatalf("inspect after reconfigure = %+v", ins)
		}

		// tail of an empty stream.
		if tl := decodeJSON[map[string]pos](t, c.ok("", "tail", "a").stdout); tl["tail"].SeqNum != 0 {
			t.Fatalf("tail = %v", tl)
		}

		// delete removes the stream and its objects; a recreated stream starts empty.
		c.ok("1\n2\n", "append", "a/data")
		del := decodeJSON[map[string]any](t, c.ok("", "stream", "delete", "a/data").stdout)
		if del["objects"].(float64) < 2 {
			t.Fatalf("delete = %v, want the manifest and at least one batch object", del)
		}
		c.fails("", []string{"does not exist"}, "tail", "a/data")
		if n := jsonLines[map[string]string](t, c.ok("", "stream", "list", "--prefix", "a").stdout); len(n) != 1 || n[0]["name"] != "a" {
			t.Fatalf("after delete, stream list = %v", n)
		}
		c.ok("", "stream", "create", "a/data")
		if tl := decodeJSON[map[string]pos](t, c.ok("", "tail", "a/data").stdout); tl["tail"].SeqNum != 0 {
			t.Fatalf("recreated stream tail = %v", tl)
		}

		// Streams of a basin are apart from the root namespace's.
		c.ok("", "stream", "create", "logs", "--basin", "my-basin-1")
		if n := jsonLines[map[string]string](t, c.ok("", "stream", "list", "--basin", "my-basin-1").stdout); len(n) != 1 || n[0]["name"] != "logs" {
			t.Fatalf("basin stream list = %v", n)
		}
		c.fails("", []string{"does not exist", "my-basin-1"}, "tail", "a", "--basin", "my-basin-1")
	})
}

func TestAppendAcksAndConditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "s")
		// 2500 lines: acks are contiguous, in order, at most 1000 records each.
		var in strings.Builder
		for i := range 2500 {
			fmt.Fprintf(&in, "line %d\n", i)
		}
		r := c.ok(in.String(), "append", "s")
		checkAcks(t, jsonLines[ack](t, r.stdout), 0, 2500)
		if r.stderr != "" {
			t.Errorf("append wrote to stderr without --progress: %q", r.stderr)
		}
		// --progress reports on stderr.
		r = c.ok("x\ny\n", "append", "s", "--progress")
		checkAcks(t, jsonLines[ack](t, r.stdout), 2500, 2)
		if !strings.Contains(r.stderr, "2 records acknowledged") {
			t.Errorf("--progress stderr = %q", r.stderr)
		}
		// A last line without '\n' is a record; empty input appends nothing.
		checkAcks(t, jsonLines[ack](t, c.ok("a\nb", "append", "s").stdout), 2502, 2)
		if out := c.ok("", "append", "s").stdout; out != "" {
			t.Fatalf("empty input printed %q", out)
		}

		// --match-seq-num: wrong -> rejected, names the flag and the tail; right -> appended.
		c.fails("z\n", []string{"--match-seq-num", "2504"}, "append", "s", "--match-seq-num", "7")
		checkAcks(t, jsonLines[ack](t, c.ok(in.String(), "append", "s", "--match-seq-num", "2504").stdout), 2504, 2500)

		// fence, then appends need the token.
		checkAcks(t, jsonLines[ack](t, c.ok("", "fence", "s", "tok-1").stdout), 5004, 1)
		c.fails("z\n", []string{"--fencing-token", "tok-1"}, "append", "s", "--fencing-token", "other")
		checkAcks(t, jsonLines[ack](t, c.ok("z\n", "append", "s", "--fencing-token", "tok-1").stdout), 5005, 1)
		c.fails("", []string{"--fencing-token"}, "fence", "s", "tok-2", "--fencing-token", "wrong")
		c.ok("", "fence", "s", "tok-2", "--fencing-token", "tok-1")

		// trim moves the trim point.
		checkAcks(t, jsonLines[ack](t, c.ok("", "trim", "s", "100").stdout), 5007, 1)
		ins := decodeJSON[inspectJSON](t, c.ok("", "inspect", "s").stdout)
		if ins.TrimPoint != 100 || ins.FencingToken != "tok-2" || ins.Tail.SeqNum != 5008 || ins.Totals["entries"] == 0 || ins.Committer != nil {
			t.Fatalf("inspect = trim %d token %q tail %+v totals %v", ins.TrimPoint, ins.FencingToken, ins.Tail, ins.Totals)
		}
		var recs uint64
		for _, e := range ins.Entries {
			recs += e.Records
		}
		if len(ins.Segments) == 0 && recs != 5008 {
			t.Fatalf("inspect entries hold %d records, want 5008", recs)
		}
		if tl := decodeJSON[map[string]pos](t, c.ok("", "tail", "s").stdout); tl["tail"].SeqNum != 5008 {
			t.Fatalf("tail = %v", tl)
		}
	})
}

func TestAppendFormats(t *testing.T) {
	seed := testseed.Get(t)
	rng := mrand.New(mrand.NewPCG(seed, seed))
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "f")
		js := `{"headers":[["type","greeting"],["lang","en"]],"body":"hello","timestamp":1000}` + "\n" +
			`{"body":"no headers"}` + "\n" +
			`{"seq_num":99,"headers":[],"body":"seq_num is ignored","timestamp":2000}` + "\n"
		checkAcks(t, jsonLines[ack](t, c.ok(js, "append", "f", "--format", "json").stdout), 0, 3)

		var b64 strings.Builder
		for range 20 {
			body := make([]byte, rng.IntN(300))
			for i := range body {
				body[i] = byte(rng.UintN(256))
			}
			if rng.IntN(2) == 0 {
				b64.WriteString(base64.StdEncoding.EncodeToString(body) + "\n")
			} else {
				fmt.Fprintf(&b64, `{"headers":[["%s","%s"]],"body":"%s"}`+"\n",
					base64.StdEncoding.EncodeToString([]byte("h")), base64.StdEncoding.EncodeToString(body[:len(body)/2]),
					base64.StdEncoding.EncodeToString(body))
			}
		}
		checkAcks(t, jsonLines[ack](t, c.ok(b64.String(), "append", "f", "--format", "base64").stdout), 3, 20)

		// Bad lines: the lines before are appended (their acks printed), the bad one is named.
		r := c.fails("{\"body\":\"good\"}\n{\"body\":1}\n", []string{"stdin line 2", "--format json"}, "append", "f", "--format", "json")
		checkAcks(t, jsonLines[ack](t, r.stdout), 23, 1)
		r = c.fails(`{"body":"ok"}`+"\n"+`{"bdy":"typo"}`+"\n", []string{"stdin line 2", "bdy"}, "append", "f", "--format", "json")
		checkAcks(t, jsonLines[ack](t, r.stdout), 24, 1)
		c.fails("!!!\n", []string{"stdin line 1", "base64"}, "append", "f", "--format", "base64")
		c.fails(`{"headers":[["only-name"]],"body":""}`+"\n", []string{"stdin line 1", "pair"}, "append", "f", "--format", "json")
		c.fails(`{"headers":[["","fence"]],"body":"x"}`+"\n"+`{"headers":[["","bogus"]],"body":"x"}`+"\n", []string{"stdin line 2"}, "append", "f", "--format", "json")
		big := strings.Repeat("x", 1<<20) + "\n"
		c.fails(big, []string{"stdin line 1", "exceeds"}, "append", "f")

		// client-require: a record without a timestamp is rejected at commit.
		c.ok("", "stream", "create", "req", "--timestamping-mode", "client-require")
		c.fails("no timestamp\n", []string{"client-require"}, "append", "req")
		checkAcks(t, jsonLines[ack](t, c.ok(`{"body":"x","timestamp":5}`+"\n", "append", "req", "--format", "json").stdout), 0, 1)
	})
}

func TestMissingStreamAndBadInput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		for _, args := range [][]string{
			{"tail", "nope"}, {"inspect", "nope"}, {"append", "nope"}, {"fence", "nope", "t"},
			{"trim", "nope", "1"}, {"stream", "config", "nope"}, {"stream", "delete", "nope"},
			{"stream", "config", "nope", "--retention-age", "1h"},
		} {
			c.fails("x\n", []string{`stream "nope"`, "does not exist", "sluice stream create nope"}, args...)
		}
		// append --create creates the stream.
		checkAcks(t, jsonLines[ack](t, c.ok("x\n", "append", "fresh", "--create").stdout), 0, 1)
	})
	dir := t.TempDir()
	long := strings.Repeat("n", 513)
	cases := []struct {
		args []string
		env  []string
		want []string
	}{
		{[]string{"append", "s", "--format", "xml"}, nil, []string{"--format", "raw, json, base64"}},
		{[]string{"append", "s"}, []string{"SLUICE_FORMAT=xml"}, []string{"SLUICE_FORMAT"}},
		{[]string{"append", "s", "--match-seq-num", "-1"}, nil, []string{"--match-seq-num"}},
		{[]string{"append", "s", "--fencing-token", strings.Repeat("t", 49)}, nil, []string{"--fencing-token", "48"}},
		{[]string{"append", "s", "--linger", "-1s"}, nil, []string{"--linger"}},
		{[]string{"stream", "create", "s", "--retention-age", "5x"}, nil, []string{"--retention-age"}},
		{[]string{"stream", "create", "s", "--retention-age", "500ms"}, nil, []string{"--retention-age", "1s"}},
		{[]string{"stream", "create", "s", "--retention-age", "1h", "--retention-infinite"}, nil, []string{"--retention-age", "--retention-infinite"}},
		{[]string{"stream", "create", "s", "--timestamping-mode", "now"}, nil, []string{"--timestamping-mode", "client-prefer"}},
		{[]string{"stream", "create", "s", "--basin", "BAD"}, nil, []string{"--basin"}},
		{[]string{"stream", "create", long}, nil, []string{"invalid stream name"}},
		{[]string{"stream", "create", ""}, nil, []string{"invalid stream name"}},
		{[]string{"stream", "list", "--limit", "-2"}, nil, []string{"--limit"}},
		{[]string{"trim", "s", "abc"}, nil, []string{"SEQ", "abc"}},
		{[]string{"fence", "s", strings.Repeat("t", 49)}, nil, []string{"fencing token", "48"}},
		{[]string{"tail"}, nil, []string{"missing STREAM (usage: sluice tail STREAM)"}},
		{[]string{"trim", "s"}, nil, []string{"missing SEQ (usage: sluice trim STREAM SEQ)"}},
		{[]string{"consume"}, nil, []string{"missing STREAM (usage:"}},
		{[]string{"read", "s", "t"}, nil, []string{`unexpected argument "t"`}},
		{[]string{"help", "bogus"}, nil, []string{`unknown help topic "bogus"`}},
		{[]string{"fence", "s", "-x"}, nil, []string{`go after "--", as in: sluice fence -- STREAM TOKEN`}},
		{[]string{"tail", "s", "--store", "ftp://x/y"}, nil, []string{"--store"}},
		{[]string{"tail", "s", "--store", "s3://"}, nil, []string{"--store"}},
		{[]string{"stream", "list", "--store", "s3://bkt/p?endpoint=http://127.0.0.1:1&region=us-east-1&path_style=true"}, []string{"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y", "AWS_MAX_ATTEMPTS=1"}, []string{"listing streams"}},
	}
	for _, tc := range cases {
		r := sluice(t, dir, "", tc.env, tc.args...)
		if r.code == 0 {
			t.Errorf("sluice %.80q: exit 0, want failure", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("sluice %.80q: stderr %q does not name %q", tc.args, r.stderr, w)
			}
		}
	}
}

func TestHelpIsAccurate(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]string{
		"":              {"append", "read", "consume", "gc", "tail", "stream", "fence", "trim", "inspect", "serve", "version", "--version", "--store", "SLUICE_"},
		"version":       {"VCS revision", "--version"},
		"append":        {"--format", "raw, json or base64", "--fencing-token", "--match-seq-num", "--basin", "--progress", "1000 records", "1 MiB", `"start"`},
		"stream":        {"create", "list", "delete", "config"},
		"stream create": {"--retention-age", "--retention-infinite", "--timestamping-mode", "--timestamping-uncapped", "--delete-on-empty-min-age"},
		"stream config": {"--retention-age", "reconfigure"},
		"fence":         {"TOKEN", "--fencing-token"},
		"trim":          {"SEQ"},
		"inspect":       {"read-only"},
		"tail":          {`"tail"`},
	}
	for sub, wants := range cases {
		args := append(strings.Fields(sub), "--help")
		r := sluice(t, dir, "", nil, args...)
		if r.code != 0 {
			t.Errorf("sluice %v: exit %d: %s", args, r.code, r.stderr)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("sluice %v does not mention %q:\n%s", args, w, r.stdout)
			}
		}
	}
	// stream config keeps the stream's value for a flag left out: it shows no default.
	if r := sluice(t, dir, "", nil, "stream", "config", "--help"); strings.Contains(r.stdout, `(default "client-prefer")`) {
		t.Errorf("stream config --help shows a default it does not apply:\n%s", r.stdout)
	}
}

// TestStreamDeleteSparesLaterObjects: "stream delete" removes the objects the stream's
// manifest referenced and those older than its last commit, but not an object written
// after it (a producer still running, or a stream created again under the name): it is
// left for the collector.
func TestStreamDeleteSparesLaterObjects(t *testing.T) {
	c := newCLI(t, backend{name: "file"})
	c.ok("", "stream", "create", "keep")
	c.ok("1\n2\n3\n", "append", "keep")
	c.ok("4\n", "append", "keep")
	fs, err := file.New(c.dir + "/sluice-data")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := stream.Locate("", "keep")
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSuffix(st.ManifestKey(), "manifest")
	late := st.DataPrefix() + "/late-object"
	if _, err := fs.Put(ctx, late, strings.NewReader("x"), 1, objectstore.PutCondition{}); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(c.dir+"/sluice-data/"+late, future, future); err != nil {
		t.Fatal(err)
	}
	keys := func() (ks []string) {
		if err := objectstore.ListAll(ctx, fs, dir, func(o objectstore.ObjectInfo) error {
			ks = append(ks, o.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ks
	}
	before := keys()
	del := decodeJSON[map[string]any](t, c.ok("", "stream", "delete", "keep").stdout)
	after := keys()
	if len(after) != 1 || after[0] != late || int(del["objects"].(float64)) != len(before)-1 {
		t.Fatalf("before %v; delete said %v; left %v, want only %s", before, del, after, late)
	}
}

// missingBucketURL returns SLUICE_TEST_S3_URL with its bucket replaced by a random one that
// does not exist, and that bucket's name. It skips t without the variable (fails under CI).
func missingBucketURL(t *testing.T) (string, string) {
	t.Helper()
	raw, loc := storetest.S3URL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	bucket := "no-such-bucket-" + hex.EncodeToString(b[:])
	return strings.Replace(raw, "s3://"+loc.Bucket, "s3://"+bucket, 1), bucket
}

// TestMissingBucketIsNotAMissingStream: on an S3 bucket that does not exist, commands that
// find no manifest must name the bucket, not suggest creating the stream (which would fail
// with NoSuchBucket too).
func TestMissingBucketIsNotAMissingStream(t *testing.T) {
	missing, _ := missingBucketURL(t)
	dir := t.TempDir()
	for _, args := range [][]string{{"read", "s"}, {"tail", "s"}, {"inspect", "s"}} {
		r := sluice(t, dir, "", nil, append(args, "--store", missing)...)
		if r.code == 0 {
			t.Errorf("sluice %v on a missing bucket: exit 0", args)
			continue
		}
		if !strings.Contains(r.stderr, "NoSuchBucket") || !strings.Contains(r.stderr, "does not create buckets") || strings.Contains(r.stderr, "create it with") {
			t.Errorf("sluice %v on a missing bucket: stderr %q, want NoSuchBucket and the bucket hint, not the stream hint", args, r.stderr)
		}
	}
}

// TestHealthWithAuthHidesStoreError: /health stays open under --auth-token, so its 503 must
// not show the store's error (which names bucket, prefix and endpoint), only its class; the
// error goes to the log.
func TestHealthWithAuthHidesStoreError(t *testing.T) {
	missing, bucket := missingBucketURL(t)
	for _, auth := range []bool{false, true} {
		args := []string{"--store", missing}
		if auth {
			args = append(args, "--auth-token", "tok")
		}
		base := startServe(t, t.TempDir(), nil, args...)
		code, body := httpGet(t, base+"/health")
		if code != 503 || !strings.Contains(body, "store unavailable") {
			t.Fatalf("auth %v: /health = %d %q, want 503 store unavailable", auth, code, body)
		}
		// The full error (S3's NoSuchBucket, request ids, the key listed) only without auth.
		if full := strings.Contains(body, "NoSuchBucket"); full == auth || auth && (strings.Contains(body, bucket) || strings.Contains(body, "RequestID")) {
			t.Errorf("auth %v: /health body %q", auth, body)
		}
		if auth && !strings.Contains(body, "(no_bucket;") {
			t.Errorf("auth: /health body %q does not give the error's class, no_bucket", body)
		}
	}
}

// TestAppendCreateInBasin: append --create --basin makes the basin as stream create --basin
// does, so that the daemon's API lists the basin and its stream (the basin had no marker,
// and the API answered basin_not_found).
func TestAppendCreateInBasin(t *testing.T) {
	dir := t.TempDir()
	if r := sluice(t, dir, "hello\n", nil, "append", "logs", "--basin", "appended-basin", "--create"); r.code != 0 {
		t.Fatalf("append --create --basin: exit %d: %s", r.code, r.stderr)
	}
	base := startServe(t, dir, nil)
	if code, body := httpGet(t, base+"/v1/basins"); code != 200 || !strings.Contains(body, `"appended-basin"`) {
		t.Fatalf("GET /v1/basins = %d %s, want the appended basin", code, body)
	}
	req, err := http.NewRequest("GET", base+"/v1/streams", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", "appended-basin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"logs"`) {
		t.Fatalf("GET /v1/streams in the basin = %d %s, want the stream", resp.StatusCode, body)
	}
}

// TestMissingStreamHintKeepsStoreAndBasin: the "create it with" hint names the --store and
// --basin the command was given, so that following it creates the stream the command looked
// for.
func TestMissingStreamHintKeepsStoreAndBasin(t *testing.T) {
	dir := t.TempDir()
	sluiceOK(t, dir, "", nil, "stream", "create", "other", "--store", "./my store", "--basin", "hint-basin")
	r := sluice(t, dir, "", nil, "read", "s", "--store", "./my store", "--basin", "hint-basin")
	const want = "(create it with: sluice stream create s --store './my store' --basin hint-basin)"
	if r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Fatalf("read of a missing stream: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	sluiceOK(t, dir, "", nil, "stream", "create", "s", "--store", "./my store", "--basin", "hint-basin")
	sluiceOK(t, dir, "", nil, "read", "s", "--store", "./my store", "--basin", "hint-basin")
}

// TestCopyExampleKeepsRecords runs the append help's copy example, read with --skip-commands
// piped to append: a trim (or fence) record replayed into the copy would act there, and trim
// away records that are readable in the source.
func TestCopyExampleKeepsRecords(t *testing.T) {
	if ex := newAppendCmd(&globals{}).Example; !strings.Contains(ex, "sluice read src --format base64 --skip-commands | sluice append copy --format base64") {
		t.Fatalf("append's copy example changed: %s", ex)
	}
	c := newCLI(t, backend{name: "file"})
	c.ok("", "stream", "create", "src")
	c.ok("", "stream", "create", "copy")
	c.ok("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n", "append", "src")
	c.ok("", "trim", "src", "5")
	c.ok("11\n12\n", "append", "src")
	want := c.ok("", "read", "src", "--format", "raw", "--skip-commands").stdout
	dump := c.ok("", "read", "src", "--format", "base64", "--skip-commands").stdout
	c.ok(dump, "append", "copy", "--format", "base64")
	if got := c.ok("", "read", "copy", "--format", "raw").stdout; got != want {
		t.Fatalf("copy made as append's help says:\nsrc readable:  %q\ncopy readable: %q", want, got)
	}
}

// TestJSONNullsRejected: a line "null", a null body and a null header value are not
// records; append refuses them, naming the line, instead of appending empty ones.
func TestJSONNullsRejected(t *testing.T) {
	c := newCLI(t, backend{name: "file"})
	c.ok("", "stream", "create", "s")
	for _, line := range []string{"null", `{"body":null}`, `{"headers":[["a",null]]}`, `[1]`} {
		r := c.run(line+"\n", "append", "s", "--format", "json")
		if r.code == 0 || !strings.Contains(r.stderr, "stdin line 1") {
			t.Fatalf("append --format json of %s: exit %d, stdout %q, stderr %q; want an error naming stdin line 1", line, r.code, r.stdout, r.stderr)
		}
	}
	if out := c.ok("", "read", "s", "--format", "raw").stdout; out != "" {
		t.Fatalf("records appended from refused lines: %q", out)
	}
}

// TestNewStreamNamesAreUTF8: the commands that create a stream apply the HTTP API's name rule
// (UTF-8, no NUL; a NUL cannot reach a command line), so that stream list's JSON names every
// stream it lists.
func TestNewStreamNamesAreUTF8(t *testing.T) {
	c := newCLI(t, backend{name: "file"})
	c.fails("", []string{"invalid stream name", "UTF-8"}, "stream", "create", "a\xffb")
	c.fails("x\n", []string{"invalid stream name", "UTF-8"}, "append", "a\xffb", "--create")
}
