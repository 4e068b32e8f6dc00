package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The library commands take their flags from SLUICE_* variables and the --config file too,
// with the command line first.
func TestConfigLayersForLibraryCommands(t *testing.T) {
	dir := t.TempDir()
	fromEnv, fromFile, fromFlag := filepath.Join(dir, "env-store"), filepath.Join(dir, "file-store"), filepath.Join(dir, "flag-store")
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("store: %s\nformat: json\nlisten: 127.0.0.1:0\n", fromFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, env []string, args ...string) result {
		t.Helper()
		r := sluice(t, dir, stdin, env, args...)
		if r.code != 0 {
			t.Fatalf("sluice %v (env %v): exit %d: %s", args, env, r.code, r.stderr)
		}
		return r
	}
	// The file sets the store and append's format (a key of another command, listen, is fine).
	run("", nil, "stream", "create", "s", "--config", cfg)
	run(`{"body":"from the file's format"}`+"\n", nil, "append", "s", "--config", cfg)
	if _, err := os.Stat(filepath.Join(fromFile, "streams", "s", "manifest")); err != nil {
		t.Fatalf("--config store not used: %v", err)
	}
	// The environment beats the file; the command line beats both.
	run("", []string{"SLUICE_STORE=" + fromEnv}, "stream", "create", "s", "--config", cfg)
	run("", []string{"SLUICE_STORE=" + fromEnv}, "stream", "create", "s", "--config", cfg, "--store", fromFlag)
	for _, d := range []string{fromEnv, fromFlag} {
		if _, err := os.Stat(filepath.Join(d, "streams", "s", "manifest")); err != nil {
			t.Fatalf("store %s not used: %v", d, err)
		}
	}
	out := run("", nil, "read", "s", "--config", cfg, "--format", "raw").stdout
	if out != "from the file's format\n" {
		t.Fatalf("read = %q", out)
	}
	// An empty variable counts as unset: the file's store and format still hold.
	empty := []string{"SLUICE_STORE=", "SLUICE_FORMAT="}
	run(`{"body":"empty variables"}`+"\n", empty, "append", "s", "--config", cfg)
	out = run("", empty, "read", "s", "--config", cfg, "--format", "raw").stdout
	if out != "from the file's format\nempty variables\n" {
		t.Fatalf("read with SLUICE_STORE and SLUICE_FORMAT empty = %q", out)
	}
	// A bad value from the environment names the variable.
	r := sluice(t, dir, "", []string{"SLUICE_TIMESTAMPING_MODE=soon"}, "stream", "create", "x", "--store", fromFlag)
	if r.code == 0 || !strings.Contains(r.stderr, "SLUICE_TIMESTAMPING_MODE") || !strings.Contains(r.stderr, "--timestamping-mode") {
		t.Fatalf("bad env value: exit %d stderr %q", r.code, r.stderr)
	}
}

// The precedence holds across flags that exclude each other: a flag on the command line
// keeps the others of its group from taking a value from the environment or the file, and
// one from the environment keeps them from taking one from the file. Values that conflict
// at one level are still refused.
func TestConfigLayersAcrossExclusiveFlags(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	infinite := write("infinite.yaml", "retention-infinite: true\n")
	tailOffset := write("tail.yaml", "tail-offset: 1\n")
	run := func(stdin string, env []string, args ...string) string {
		t.Helper()
		r := sluice(t, dir, stdin, env, append(args, "--store", store)...)
		if r.code != 0 {
			t.Fatalf("sluice %v (env %v): exit %d: %s", args, env, r.code, r.stderr)
		}
		return r.stdout
	}
	for i, c := range []struct {
		env  []string
		args []string
	}{
		{[]string{"SLUICE_RETENTION_INFINITE=true"}, nil},
		{nil, []string{"--config", infinite}},
		{[]string{"SLUICE_RETENTION_INFINITE=true"}, []string{"--config", infinite}},
	} {
		name := fmt.Sprintf("s%d", i)
		out := run("", c.env, append([]string{"stream", "create", name, "--retention-age", "7d"}, c.args...)...)
		if !strings.Contains(out, `"age": 604800`) {
			t.Errorf("case %d: the command line's --retention-age did not win: %s", i, out)
		}
	}
	out := run("", []string{"SLUICE_RETENTION_AGE=1h"}, "stream", "create", "e", "--config", infinite)
	if !strings.Contains(out, `"age": 3600`) {
		t.Errorf("the environment's retention age did not beat the file's retention-infinite: %s", out)
	}
	run("a\nb\nc\n", nil, "append", "s0")
	if out := run("", []string{"SLUICE_SEQ_NUM=0"}, "read", "s0", "--config", tailOffset, "--format", "raw"); out != "a\nb\nc\n" {
		t.Errorf("read with SLUICE_SEQ_NUM=0 and the file's tail-offset 1 = %q, want every record", out)
	}
	if out := run("", []string{"SLUICE_SEQ_NUM=0"}, "read", "s0", "--tail-offset", "1", "--format", "raw"); out != "c\n" {
		t.Errorf("read with --tail-offset 1 and SLUICE_SEQ_NUM=0 = %q, want the last record", out)
	}
	r := sluice(t, dir, "", []string{"SLUICE_RETENTION_INFINITE=true", "SLUICE_RETENTION_AGE=1h"}, "stream", "create", "both", "--store", store)
	if r.code == 0 || !strings.Contains(r.stderr, "exclude each other") {
		t.Errorf("conflicting values from the environment: exit %d, stderr %q", r.code, r.stderr)
	}
}

// SIGINT while stdin is still open: append stops reading, commits what it read, prints the
// acks and exits 1.
func TestAppendInterrupted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "s")
		cmd := exec.Command(sluiceBin, append([]string{"append", "s"}, c.b.args...)...)
		cmd.Dir, cmd.Env = c.dir, cleanEnv()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		// The first line's ack shows it was read and committed.
		fmt.Fprintln(stdin, "one")
		buf := make([]byte, 4096)
		n, err := stdout.Read(buf)
		if err != nil || !strings.Contains(string(buf[:n]), `"end":{"seq_num":1`) {
			t.Fatalf("first ack %q: %v", buf[:n], err)
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		rest, _ := io.ReadAll(stdout)
		err = cmd.Wait()
		if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), "interrupted") ||
			!strings.Contains(stderr.String(), "1 records acknowledged") {
			t.Fatalf("append after SIGINT: %v, stdout %q, stderr %q", err, rest, stderr.String())
		}
		if tl := decodeJSON[map[string]pos](t, c.ok("", "tail", "s").stdout); tl["tail"].SeqNum != 1 {
			t.Fatalf("tail = %v", tl)
		}
	})
}

// Showing a stream's config never writes it: stream config takes its settings from the
// command line only, not from SLUICE_* variables or a shared --config file.
func TestStreamConfigShowingNeverWrites(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("retention-age: 2d\ntimestamping-mode: arrival\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sluiceOK(t, dir, "", nil, "stream", "create", "s", "--store", "./d")
	manifest := filepath.Join(dir, "d", "streams", "s", "manifest")
	before, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		env  []string
		args []string
	}{
		{[]string{"SLUICE_RETENTION_AGE=1d"}, nil},
		{[]string{"SLUICE_QUEUE_MODE=true", "SLUICE_DELETE_ON_EMPTY_MIN_AGE=1h"}, nil},
		{nil, []string{"--config", cfg}},
	} {
		out := compactJSON(t, sluiceOK(t, dir, "", run.env, append([]string{"stream", "config", "s", "--store", "./d"}, run.args...)...))
		if !strings.Contains(out, `"retention_policy":{"infinite":{}}`) || strings.Contains(out, "arrival") {
			t.Errorf("stream config with %v %v shows %s, want the stream's own config", run.env, run.args, out)
		}
		after, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("stream config with %v %v wrote the manifest", run.env, run.args)
		}
	}
	// Flags on the command line change it, and only them.
	out := compactJSON(t, sluiceOK(t, dir, "", []string{"SLUICE_TIMESTAMPING_MODE=arrival"}, "stream", "config", "s", "--store", "./d", "--retention-age", "1d", "--config", cfg))
	if !strings.Contains(out, `"retention_policy":{"age":86400}`) || strings.Contains(out, "arrival") {
		t.Errorf("stream config --retention-age 1d shows %s", out)
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
	return b.String()
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
