package main

// Bad input and help truths found by a review of the command line; each test failed before
// its fix.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

// serve --listen "" (e.g. SLUICE_LISTEN= in a unit file) listens on every interface at a
// random port instead of failing.
func TestServeEmptyListenFailsFast(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(sluiceBin, "serve", "--listen", "", "--log-format", "json")
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(stderr.String(), "--listen") {
			t.Fatalf("serve --listen \"\": exit %d, stderr %q; want a non-zero exit naming --listen", cmd.ProcessState.ExitCode(), stderr.String())
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("serve --listen \"\" is serving instead of failing; logs:\n%s", stderr.String())
	}
}

// A --store path that does not exist (a typo) is not an error for read-only commands: they
// create the directory and report an empty store.
func TestMissingStoreDirectoryIsAnError(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "no-such-store")
	for _, args := range [][]string{
		{"stream", "list", "--store", typo},
		{"gc", "--once", "--store", typo},
	} {
		r := sluice(t, dir, "", nil, args...)
		_, statErr := os.Stat(typo)
		if r.code == 0 || statErr == nil {
			t.Errorf("sluice %q: exit %d, stdout %q, stderr %q, directory created: %v; want an error naming the missing directory and nothing created",
				args, r.code, r.stdout, r.stderr, statErr == nil)
		}
		_ = os.RemoveAll(typo)
	}
}

// A number of days that overflows a time.Duration is reported as a garbage (negative or
// fractional) duration instead of the value given.
func TestHugeDayDurationIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"--retention-age", "--delete-on-empty-min-age"} {
		r := sluice(t, dir, "", nil, "stream", "create", "s", flag, "999999d")
		if r.code == 0 || !strings.Contains(r.stderr, "999999d") || strings.Contains(r.stderr, "-1620501h") {
			t.Errorf("stream create %s 999999d: exit %d, stderr %q; want an error naming 999999d (too large)", flag, r.code, r.stderr)
		}
	}
}

// README: "Exit status ... 1 on any failure, with one line `sluice: <what went wrong>` on
// stderr". Errors joined with errors.Join span several lines, the later ones without the
// "sluice:" prefix.
func TestErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"consume", "s"},
		{"serve", "--shutdown-timeout", "0", "--gc-interval", "0"},
		{"stream", "create", "s", "--retention-age", "500ms", "--delete-on-empty-min-age", "1500ms"},
	} {
		r := sluice(t, dir, "", nil, args...)
		if r.code == 0 || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
			t.Errorf("sluice %q: exit %d, stderr %q; want one line", args, r.code, r.stderr)
		}
	}
}

// README: "the first one found wins" (command line, then environment, then config file). A
// start position from the config file or the environment still conflicts with a different
// start flag given on the command line, and the error does not say where the other came from.
func TestCommandLineStartBeatsConfigAndEnv(t *testing.T) {
	c := newCLI(t, backend{name: "file"})
	c.ok("", "stream", "create", "s")
	c.ok("a\nb\nc\n", "append", "s")
	cfg := filepath.Join(c.dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("seq-num: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.run("", "read", "s", "--tail-offset", "1", "--format", "raw", "--config", cfg)
	if r.code != 0 || r.stdout != "c\n" {
		t.Errorf("read --tail-offset 1 with seq-num in the config file: exit %d, stdout %q, stderr %q; want \"c\\n\"", r.code, r.stdout, r.stderr)
	}
	c.env = []string{"SLUICE_TAIL_OFFSET=1"}
	r = c.run("", "read", "s", "--seq-num", "0", "--format", "raw")
	if r.code != 0 || r.stdout != "a\nb\nc\n" {
		t.Errorf("read --seq-num 0 with SLUICE_TAIL_OFFSET=1: exit %d, stdout %q, stderr %q; want all three records", r.code, r.stdout, r.stderr)
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
