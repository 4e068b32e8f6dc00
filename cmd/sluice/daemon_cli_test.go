package main

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// daemonCLI starts `sluice serve` with a root token on its own directory and returns a cli
// whose commands go through it (SLUICE_ENDPOINT, SLUICE_TOKEN, SLUICE_BASIN; no store), and
// the daemon's URL. The basin is created through the CLI.
func daemonCLI(t *testing.T, basin string) (*cli, string) {
	t.Helper()
	const root = "root-token-daemon-cli"
	base := startServe(t, t.TempDir(), []string{"SLUICE_AUTH_TOKEN=" + root})
	c := newCLI(t, backend{name: "daemon"})
	c.env = []string{"SLUICE_ENDPOINT=" + base, "SLUICE_TOKEN=" + root, "SLUICE_BASIN=" + basin}
	c.ok("", "basin", "create", basin)
	return c, base
}

// normalize hides what differs between two runs of the same commands: times.
var normalizer = regexp.MustCompile(`"(timestamp|created_at)":("[^"]*"|\d+)`)

func normalize(s string) string { return normalizer.ReplaceAllString(s, `"$1":T`) }

// TestTourThroughDaemonMatchesStore runs the README's tour (and a little more) once on a
// store and once through a daemon with no store flags at all: every command prints the same
// (but for times) and exits the same.
func TestTourThroughDaemonMatchesStore(t *testing.T) {
	const basin = "tour-basin"
	d, _ := daemonCLI(t, basin)
	s := newCLI(t, backend{name: "file"})
	s.env = []string{"SLUICE_BASIN=" + basin}
	s.ok("", "basin", "create", basin)
	steps := []struct {
		stdin string
		args  []string
	}{
		{"", []string{"stream", "create", "orders"}},
		{"order-1\norder-2\norder-3\n", []string{"append", "orders"}},
		{"", []string{"read", "orders"}},
		{"", []string{"read", "orders", "--tail-offset", "1", "--format", "raw"}},
		{"", []string{"read", "orders", "--seq-num", "1", "--count", "1"}},
		{"", []string{"tail", "orders"}},
		{"", []string{"trim", "orders", "2"}},
		{"", []string{"read", "orders"}},
		{"", []string{"read", "orders", "--format", "base64"}},
		{"", []string{"read", "orders", "--skip-commands"}},
		{"", []string{"read", "orders", "--skip-commands", "--count", "1"}},
		{"", []string{"fence", "orders", "writer-1"}},
		{"x\n", []string{"append", "orders", "--fencing-token", "writer-2"}},
		{"y\n", []string{"append", "orders", "--fencing-token", "writer-1", "--match-seq-num", "5"}},
		{"z\n", []string{"append", "orders", "--match-seq-num", "99"}},
		{"", []string{"read", "orders", "--seq-num", "99"}},
		{"", []string{"read", "orders", "--seq-num", "99", "--clamp"}},
		{"", []string{"read", "orders", "--timestamp", "99999999999999"}},
		{"", []string{"read", "orders", "--seq-num", "2", "--bytes", "30"}},
		{"", []string{"tail", "missing"}},
		{"", []string{"read", "missing"}},
		{"a\n", []string{"append", "missing"}},
		{"a\nb\n", []string{"append", "made", "--create"}},
		{"", []string{"stream", "config", "orders", "--retention-age", "7d", "--timestamping-mode", "arrival"}},
		{"", []string{"stream", "config", "orders"}},
		{"", []string{"stream", "create", "orders"}},
		{"", []string{"stream", "list"}},
		{"", []string{"stream", "list", "--prefix", "m"}},
		{"", []string{"basin", "list"}},
	}
	for _, st := range steps {
		rs, rd := s.run(st.stdin, st.args...), d.run(st.stdin, st.args...)
		if rs.code != rd.code || normalize(rs.stdout) != normalize(rd.stdout) {
			t.Errorf("sluice %q:\n store:  exit %d stdout %q stderr %q\n daemon: exit %d stdout %q stderr %q",
				st.args, rs.code, rs.stdout, rs.stderr, rd.code, rd.stdout, rd.stderr)
		}
	}
	// The daemon's refusals are in the store's words, naming the daemon.
	d.fails("", []string{`stream "missing" in basin "tour-basin" at daemon http://`, "does not exist (create it with: sluice stream create missing --basin tour-basin)"}, "tail", "missing")
	d.fails("x\n", []string{"fencing token mismatch", `"writer-1"`, "--fencing-token"}, "append", "orders", "--fencing-token", "nope")
	d.fails("", []string{"--seq-num 99 is past the tail", "--clamp"}, "read", "orders", "--seq-num", "99")
	// stream delete prints no object count through a daemon (the API does not tell it).
	if got := d.ok("", "stream", "delete", "made").stdout; normalize(got) != "{\n  \"deleted\": \"made\"\n}\n" {
		t.Errorf("stream delete through the daemon printed %q", got)
	}
	d.fails("", []string{"does not exist"}, "read", "made")
}

// TestReadFollowThroughDaemon: read --follow through a daemon prints records as they are
// appended, and SIGINT ends it with exit 0; tail --follow too.
func TestReadFollowThroughDaemon(t *testing.T) {
	c, _ := daemonCLI(t, "follow-basin")
	c.ok("", "stream", "create", "live")
	c.ok("old\n", "append", "live")
	p := c.start("read", "live", "--seq-num", "1", "--follow", "--format", "raw")
	tp := c.start("tail", "live", "--follow", "--interval", "20ms")
	if l := tp.next(); l != `{"tail":{"seq_num":1,"timestamp":`+strings.TrimPrefix(l, `{"tail":{"seq_num":1,"timestamp":`) {
		t.Fatalf("first tail line = %q", l)
	}
	for i := range 3 {
		c.ok(fmt.Sprintf("new-%d\n", i), "append", "live")
		if l := p.next(); l != fmt.Sprintf("new-%d", i) {
			t.Fatalf("followed line %d = %q", i, l)
		}
	}
	if code := p.stop(syscall.SIGINT); code != 0 {
		t.Fatalf("read --follow exited %d on SIGINT; stderr:\n%s", code, p.stderr.String())
	}
	if code := tp.stop(syscall.SIGINT); code != 0 {
		t.Fatalf("tail --follow exited %d on SIGINT; stderr:\n%s", code, tp.stderr.String())
	}
	// --follow with --count ends by itself; --skip-commands leaves a trim out of the count.
	p = c.start("read", "live", "--seq-num", "3", "--follow", "--count", "2", "--skip-commands", "--format", "json")
	c.ok("", "trim", "live", "1")
	c.ok("a\n", "append", "live")
	l1, l2 := p.next(), p.next()
	if !strings.Contains(l1, `"body":"new-2"`) || !strings.Contains(l2, `"body":"a"`) {
		t.Fatalf("follow --count --skip-commands lines = %q %q", l1, l2)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("read --follow --count exited %d; stderr:\n%s", code, p.stderr.String())
	}
}

// TestAppendThroughDaemonBatchesAsOnAStore: 2500 lines go in appends of at most 1000 records,
// each acknowledged in order, as on a store.
func TestAppendThroughDaemonBatchesAsOnAStore(t *testing.T) {
	c, _ := daemonCLI(t, "batch-basin")
	c.ok("", "stream", "create", "s")
	var in strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&in, "%d\n", i)
	}
	acks := jsonLines[ack](t, c.ok(in.String(), "append", "s", "--linger", "50ms").stdout)
	checkAcks(t, acks, 0, 2500)
	if len(acks) > 5 {
		t.Errorf("%d appends for 2500 lines, want about 3 (1000 records each)", len(acks))
	}
	if got := c.ok("", "read", "s", "--seq-num", "2499", "--format", "raw").stdout; got != "2499\n" {
		t.Errorf("last record = %q", got)
	}
}

// TestStoreOnlyCommandsRefuseEndpoint: with SLUICE_ENDPOINT set, the commands that need the
// store say so and exit 1, before calling anything; --endpoint with --store is refused too.
func TestStoreOnlyCommandsRefuseEndpoint(t *testing.T) {
	c := newCLI(t, backend{name: "daemon"})
	c.env = []string{"SLUICE_ENDPOINT=http://127.0.0.1:1", "SLUICE_TOKEN=t", "SLUICE_BASIN=some-basin"}
	for _, args := range [][]string{
		{"gc", "--once"},
		{"inspect", "s"},
	} {
		r := c.run("", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "sluice "+args[0]) || !strings.Contains(r.stderr, "works on a store, not through a daemon") {
			t.Errorf("sluice %q with SLUICE_ENDPOINT: exit %d stderr %q, want 1 and the refusal", args, r.code, r.stderr)
		}
	}
	c.fails("", []string{"--store and --endpoint exclude each other"}, "tail", "s", "--store", "./d", "--endpoint", "http://127.0.0.1:1")
	// --store on the command line wins over SLUICE_ENDPOINT: the command runs on the store.
	c.fails("", []string{"--store ./d: directory", "does not exist"}, "tail", "s", "--store", "./d")
	// serve is the daemon: a shared environment's SLUICE_ENDPOINT does not concern it.
	base := startServe(t, c.dir, []string{"SLUICE_ENDPOINT=http://127.0.0.1:1", "SLUICE_STORE=./served"})
	if code, body := httpGet(t, base+"/health"); code != 200 {
		t.Errorf("serve with SLUICE_ENDPOINT and SLUICE_STORE set: /health %d %q", code, body)
	}
	c.env = []string{"SLUICE_ENDPOINT=http://127.0.0.1:1"}
	c.fails("", []string{"--basin (or SLUICE_BASIN) is required with --endpoint", "root namespace"}, "read", "s")
	c.fails("", []string{"--queue-mode needs a store"}, "stream", "create", "q", "--queue-mode", "--basin", "some-basin")
}

// TestDaemonCLIRefusesBadAndScopedTokens: a wrong token is a 401 named with a hint and exit
// 1; a token scoped to reading is refused appends (403) but reads.
func TestDaemonCLIRefusesBadAndScopedTokens(t *testing.T) {
	c, base := daemonCLI(t, "scope-basin")
	c.ok("", "stream", "create", "orders")
	c.ok("one\n", "append", "orders")

	bad := newCLI(t, backend{name: "daemon"})
	bad.env = []string{"SLUICE_ENDPOINT=" + base, "SLUICE_TOKEN=not-a-token", "SLUICE_BASIN=scope-basin"}
	for _, args := range [][]string{{"read", "orders"}, {"tail", "orders"}, {"stream", "list"}, {"basin", "list"}} {
		r := bad.run("", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "401 authn") || !strings.Contains(r.stderr, "check --token or SLUICE_TOKEN") {
			t.Errorf("sluice %q with a bad token: exit %d stderr %q, want 1 and the 401 named", args, r.code, r.stderr)
		}
	}

	r := c.ok("", "token", "issue", "reader", "--basins", "exact:scope-basin", "--streams", "prefix:", "--op-groups", "stream=r")
	tok := decodeJSON[struct {
		AccessToken string `json:"access_token"`
	}](t, r.stdout).AccessToken
	reader := newCLI(t, backend{name: "daemon"})
	reader.env = []string{"SLUICE_ENDPOINT=" + base, "SLUICE_TOKEN=" + tok, "SLUICE_BASIN=scope-basin"}
	if got := reader.ok("", "read", "orders", "--format", "raw").stdout; got != "one\n" {
		t.Errorf("read with the reader's token = %q", got)
	}
	reader.ok("", "tail", "orders")
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{"two\n", []string{"append", "orders"}},
		{"", []string{"trim", "orders", "1"}},
		{"", []string{"stream", "create", "other"}},
		{"", []string{"basin", "create", "other-basin"}},
	} {
		r := reader.run(c.stdin, c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, "403 permission_denied") || !strings.Contains(r.stderr, "the token's scope does not allow it") {
			t.Errorf("sluice %q with a read-only token: exit %d stderr %q, want 1 and the 403 named", c.args, r.code, r.stderr)
		}
	}

	// A token that may only append (access.md's service) can use sluice append, and nothing else.
	r = c.ok("", "token", "issue", "writer", "--basins", "exact:scope-basin", "--streams", "exact:orders", "--ops", "append")
	writer := newCLI(t, backend{name: "daemon"})
	writer.env = []string{"SLUICE_ENDPOINT=" + base, "SLUICE_TOKEN=" + decodeJSON[struct {
		AccessToken string `json:"access_token"`
	}](t, r.stdout).AccessToken, "SLUICE_BASIN=scope-basin"}
	checkAcks(t, jsonLines[ack](t, writer.ok("two\nthree\n", "append", "orders").stdout), 1, 2)
	writer.fails("", []string{"403 permission_denied"}, "read", "orders")
	writer.fails("x\n", []string{"403 permission_denied"}, "append", "other")
}
