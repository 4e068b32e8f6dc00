package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lagSeconds hides the lag in seconds, which depends on when a command runs.
var lagSeconds = regexp.MustCompile(`"lag_seconds":[0-9.e+-]+`)

func normalizeGroups(s string) string {
	return lagSeconds.ReplaceAllString(normalize(s), `"lag_seconds":S`)
}

// TestConsumeThroughDaemonMatchesStore runs the README's consume example, and the groups
// commands around it, once on a store and once through a daemon: each prints the same, exits
// the same and pipes the same records to the command; a restarted member resumes after the
// checkpoint.
func TestConsumeThroughDaemonMatchesStore(t *testing.T) {
	const basin = "consume-basin"
	d, _ := daemonCLI(t, basin)
	s := newCLI(t, backend{name: "file"})
	s.env = []string{"SLUICE_BASIN=" + basin}
	s.ok("", "basin", "create", basin)
	readme := []string{"consume", "orders", "--group", "billing", "--format", "raw", "--exec", "cat >> billed.txt", "--stop-at-tail"}
	steps := []struct {
		stdin string
		args  []string
	}{
		{"", []string{"stream", "create", "orders"}},
		{"order-1\norder-2\norder-3\n", []string{"append", "orders"}},
		{"", []string{"groups", "list", "orders"}},
		{"", readme},
		{"", []string{"groups", "list", "orders"}},
		{"", readme}, // nothing new: the command is not run
		{"order-4\n", []string{"append", "orders"}},
		{"", []string{"fence", "orders", "w1"}},
		{"order-5\n", []string{"append", "orders", "--fencing-token", "w1"}},
		{"", readme}, // the restarted member resumes after the checkpoint
		{"", []string{"groups", "list", "orders"}},
		{"", []string{"consume", "orders", "--group", "audit", "--batch", "10", "--include-commands", "--exec", "cat >> audit.txt", "--stop-at-tail"}},
		{"", []string{"consume", "orders", "--group", "late", "--start-at", "tail", "--exec", "cat >> late.txt", "--stop-at-tail"}},
		{"", []string{"consume", "orders", "--group", "broken", "--exec", "exit 3", "--max-attempts", "2", "--backoff", "1ms", "--stop-at-tail"}},
		{"", []string{"groups", "list", "orders"}},
		{"", []string{"groups", "reset", "orders", "billing", "--to-seq-num", "1"}},
		{"", []string{"groups", "reset", "orders", "billing", "--to-seq-num", "99"}},
		{"", []string{"groups", "reset", "orders", "billing", "--to-seq-num", "3"}},
		{"", readme},
		{"", []string{"groups", "reset", "orders", "fresh", "--to-tail"}},
		{"", []string{"groups", "reset", "orders", "billing", "--to-timestamp", "0"}},
		{"", []string{"groups", "delete", "orders", "broken"}},
		{"", []string{"groups", "delete", "orders", "broken"}},
		{"", []string{"groups", "list", "orders"}},
		{"", []string{"groups", "list", "missing"}},
		{"", []string{"consume", "missing", "--group", "g", "--exec", "cat", "--stop-at-tail"}},
	}
	for _, st := range steps {
		rs, rd := s.run(st.stdin, st.args...), d.run(st.stdin, st.args...)
		if rs.code != rd.code || normalizeGroups(rs.stdout) != normalizeGroups(rd.stdout) {
			t.Errorf("sluice %q:\n store:  exit %d stdout %q stderr %q\n daemon: exit %d stdout %q stderr %q",
				st.args, rs.code, rs.stdout, rs.stderr, rd.code, rd.stdout, rd.stderr)
		}
	}
	for _, f := range []string{"billed.txt", "audit.txt", "late.txt"} {
		ws, _ := os.ReadFile(filepath.Join(s.dir, f))
		wd, _ := os.ReadFile(filepath.Join(d.dir, f))
		if normalize(string(ws)) != normalize(string(wd)) {
			t.Errorf("%s: store %q, daemon %q", f, ws, wd)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(d.dir, "billed.txt")); string(got) != "order-1\norder-2\norder-3\norder-4\norder-5\norder-4\norder-5\n" {
		t.Errorf("billed.txt through the daemon = %q", got)
	}
	d.fails("", []string{`group "broken"`, "--exec command failed on records 0..0 after 2 attempts"},
		"consume", "orders", "--group", "broken", "--exec", "exit 3", "--max-attempts", "2", "--backoff", "1ms", "--stop-at-tail")
	d.fails("", []string{`stream "orders" in basin "consume-basin" at daemon http://`, `has no consumer group "nope"`}, "groups", "delete", "orders", "nope")
	d.fails("", []string{"--committer needs a store", "--metrics-listen needs a store"},
		"consume", "orders", "--group", "g", "--exec", "cat", "--committer", "http://127.0.0.1:1", "--metrics-listen", "127.0.0.1:0")
}

// TestConsumeThroughDaemonSecondMemberFencesFirst: a member following through a daemon is
// fenced by a second member's join; it notices while idle at the tail and exits 1, as on a
// store, and the second member resumes after the first's acknowledgements.
func TestConsumeThroughDaemonSecondMemberFencesFirst(t *testing.T) {
	c, _ := daemonCLI(t, "fence-basin")
	c.ok("", "stream", "create", "q")
	c.ok("r0\nr1\n", "append", "q")
	a := c.start("consume", "q", "--group", "g", "--format", "raw", "--ack-interval", "50ms", "--exec", "cat")
	for _, want := range []string{"r0", "r1"} {
		if l := a.next(); l != want {
			t.Fatalf("first member piped %q, want %q", l, want)
		}
	}
	// Its acknowledgements are written within --ack-interval.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.ok("", "groups", "list", "q").stdout, `"checkpoint":2`) {
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint not written: %s", c.ok("", "groups", "list", "q").stdout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.ok("r2\n", "append", "q")
	if l := a.next(); l != "r2" {
		t.Fatalf("first member piped %q, want r2", l)
	}
	// The second member takes over: it gets only what the first did not acknowledge.
	time.Sleep(200 * time.Millisecond) // r2's acknowledgement
	if got := c.ok("", "consume", "q", "--group", "g", "--format", "raw", "--stop-at-tail", "--exec", "cat").stdout; got != "" {
		t.Errorf("second member piped %q after the first acknowledged everything", got)
	}
	select {
	case <-a.done:
		if code := a.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(a.stderr.String(), "another member took over") {
			t.Fatalf("fenced member exited %d; stderr:\n%s", code, a.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the fenced member is still running 15s after a newer member joined; stderr:\n%s", a.stderr.String())
	}
	// A member fenced while it retries a failing command exits too.
	c.ok("r3\n", "append", "q")
	b := c.start("consume", "q", "--group", "g", "--format", "raw", "--max-attempts", "0", "--backoff", "20ms", "--max-backoff", "20ms", "--exec", "cat; exit 3")
	if l := b.next(); l != "r3" {
		t.Fatalf("retrying member piped %q", l)
	}
	c.ok("", "consume", "q", "--group", "g", "--stop-at-tail", "--exec", "cat >/dev/null")
	select {
	case <-b.done:
		if code := b.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(b.stderr.String(), "another member took over") {
			t.Fatalf("fenced retrying member exited %d; stderr:\n%s", code, b.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the fenced retrying member is still running")
	}
	// groups delete fences too: the member says the group was deleted.
	m := c.start("consume", "q", "--group", "g", "--exec", "cat >/dev/null")
	time.Sleep(300 * time.Millisecond)
	c.ok("", "groups", "delete", "q", "g")
	select {
	case <-m.done:
		if code := m.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(m.stderr.String(), "was deleted") {
			t.Fatalf("member of a deleted group exited %d; stderr:\n%s", code, m.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the member of a deleted group is still running")
	}
}

// TestConsumeThroughDaemonBatchesAcks: through a daemon, acknowledgements wait for
// --ack-interval as on a store (the checkpoint does not move per record), and SIGINT writes
// them before consume exits 0; a member that then joins resumes after them.
func TestConsumeThroughDaemonBatchesAcks(t *testing.T) {
	c, _ := daemonCLI(t, "acks-basin")
	c.ok("", "stream", "create", "q")
	c.ok("r0\nr1\n", "append", "q")
	a := c.start("consume", "q", "--group", "g", "--format", "raw", "--ack-interval", "1h", "--exec", "cat")
	for _, want := range []string{"r0", "r1"} {
		if l := a.next(); l != want {
			t.Fatalf("member piped %q, want %q", l, want)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if got := c.ok("", "groups", "list", "q").stdout; !strings.Contains(got, `"checkpoint":0`) {
		t.Errorf("checkpoint moved before --ack-interval 1h passed: %s", got)
	}
	if code := a.stop(syscall.SIGINT); code != 0 {
		t.Fatalf("consume exited %d on SIGINT; stderr:\n%s", code, a.stderr.String())
	}
	if got := c.ok("", "groups", "list", "q").stdout; !strings.Contains(got, `"checkpoint":2`) {
		t.Errorf("checkpoint after SIGINT: %s, want 2", got)
	}
	c.ok("r2\n", "append", "q")
	if got := c.ok("", "consume", "q", "--group", "g", "--format", "raw", "--stop-at-tail", "--exec", "cat").stdout; got != "r2\n" {
		t.Errorf("restarted member piped %q, want r2 only", got)
	}
}

// TestConsumeThroughDaemonWithAReadToken: a token that may read the stream may consume it in
// a group and list its groups, but not reset or delete a group (reconfigure-stream).
func TestConsumeThroughDaemonWithAReadToken(t *testing.T) {
	c, base := daemonCLI(t, "reader-basin")
	c.ok("", "stream", "create", "orders")
	c.ok("one\n", "append", "orders")
	r := c.ok("", "token", "issue", "reader", "--basins", "exact:reader-basin", "--streams", "prefix:", "--ops", "read")
	reader := newCLI(t, backend{name: "daemon"})
	reader.env = []string{"SLUICE_ENDPOINT=" + base, "SLUICE_BASIN=reader-basin", "SLUICE_TOKEN=" + decodeJSON[struct {
		AccessToken string `json:"access_token"`
	}](t, r.stdout).AccessToken}
	if got := reader.ok("", "consume", "orders", "--group", "g", "--format", "raw", "--stop-at-tail", "--exec", "cat").stdout; got != "one\n" {
		t.Errorf("consume with a read token piped %q", got)
	}
	if got := reader.ok("", "groups", "list", "orders").stdout; !strings.Contains(got, `"group":"g"`) || !strings.Contains(got, `"checkpoint":1`) {
		t.Errorf("groups list with a read token: %q", got)
	}
	reader.fails("", []string{"403 permission_denied", "reconfigure-stream", "the token's scope does not allow it"}, "groups", "reset", "orders", "g", "--to-seq-num", "0")
	reader.fails("", []string{"403 permission_denied", "reconfigure-stream"}, "groups", "delete", "orders", "g")
}
