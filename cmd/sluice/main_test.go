package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// sluiceBin is the binary built once for the end-to-end tests.
var sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	out, err := exec.Command("go", "build", "-o", sluiceBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building sluice: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

// sluice runs the binary in dir with args, stdin and extra environment.
func sluice(t *testing.T, dir, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running sluice %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{so.String(), se.String(), code}
}

// sluiceOK is sluice that fails t unless the command exits 0; it returns stdout.
func sluiceOK(t *testing.T, dir, stdin string, env []string, args ...string) string {
	t.Helper()
	r := sluice(t, dir, stdin, env, args...)
	if r.code != 0 {
		t.Fatalf("sluice %v: exit %d: %s", args, r.code, r.stderr)
	}
	return r.stdout
}

// cleanEnv is the environment without SLUICE_* variables, so tests are not steered by the
// developer's shell.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			env = append(env, kv)
		}
	}
	return env
}

// startServe starts `sluice serve` in dir on a free port and returns its base URL. It is
// stopped with SIGTERM at the end of the test, and must exit 0.
func startServe(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	base, _ := startServeLogs(t, dir, env, args...)
	return base
}

// startServeLogs is startServe that also returns a function giving the daemon's log so far.
func startServeLogs(t *testing.T, dir string, env []string, args ...string) (string, func() string) {
	t.Helper()
	cmd := exec.Command(sluiceBin, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	var (
		logsMu sync.Mutex
		logs   bytes.Buffer
	)
	logged := func() string {
		logsMu.Lock()
		defer logsMu.Unlock()
		return logs.String()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logsMu.Lock()
			logs.WriteString(line + "\n")
			logsMu.Unlock()
			if i := strings.Index(line, `"listen":"`); i >= 0 {
				rest := line[i+len(`"listen":"`):]
				select {
				case addrc <- rest[:strings.IndexByte(rest, '"')]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		<-done
		if err != nil {
			t.Errorf("serve exited with %v; logs:\n%s", err, logged())
		}
	})
	select {
	case addr := <-addrc:
		return "http://" + addr, logged
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not report its address; logs:\n%s", logged())
	}
	return "", logged
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeStartsWithNoFlagsInEmptyDir(t *testing.T) {
	dir := t.TempDir()
	// No --store: the default local directory ./sluice-data must be used and created.
	base := startServe(t, dir, nil)
	code, body := httpGet(t, base+"/health")
	if code != 200 || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/health = %d %q", code, body)
	}
	code, body = httpGet(t, base+"/metrics")
	for _, want := range []string{"go_goroutines", `sluice_objectstore_operations_total{op="list",purpose=`, "sluice_engine_open_producers"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics = %d, missing %s:\n%.3000s", code, want, body)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "sluice-data")); err != nil || !st.IsDir() {
		t.Fatalf("default store directory not created: %v", err)
	}
}

// TestReadOnlyCommandsLeaveTheDefaultStoreUnmade: before any command made the default store
// ./sluice-data, the commands that do not create streams read it as an empty store and do
// not make it (inspect says it changes nothing); stream create does make it.
func TestReadOnlyCommandsLeaveTheDefaultStoreUnmade(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"inspect", "s"}, {"read", "s"}, {"tail", "s"}, {"trim", "s", "1"}, {"fence", "s", "t"}, {"stream", "config", "s"}} {
		r := sluice(t, dir, "", nil, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "does not exist (create it with: sluice stream create s)") {
			t.Errorf("sluice %v on no store: exit %d, stderr %q, want the missing stream named", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"stream", "list"}, {"gc", "--once"}} {
		if r := sluice(t, dir, "", nil, args...); r.code != 0 || strings.TrimSpace(r.stdout) != "" {
			t.Errorf("sluice %v on no store: exit %d, stdout %q, stderr %q, want an empty store", args, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sluice-data")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a command that creates nothing made the default store: %v", err)
	}
	if r := sluice(t, dir, "", nil, "stream", "create", "s"); r.code != 0 {
		t.Fatalf("stream create: exit %d: %s", r.code, r.stderr)
	}
	if st, err := os.Stat(filepath.Join(dir, "sluice-data")); err != nil || !st.IsDir() {
		t.Fatalf("stream create did not make the default store: %v", err)
	}
}

func TestBadFlagsAndURLs(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"serve", "--listen", "nonsense"}, nil, "--listen"},
		{[]string{"serve", "--store", "ftp://x/y"}, nil, "--store"},
		{[]string{"serve", "--log-level", "loud"}, nil, "--log-level"},
		{[]string{"serve"}, []string{"SLUICE_LOG_LEVEL=loud"}, "SLUICE_LOG_LEVEL"},
		{[]string{"serve", "--no-such-flag"}, nil, "no-such-flag"},
		{[]string{"no-such-command"}, nil, "no-such-command"},
	}
	for _, c := range cases {
		r := sluice(t, dir, "", c.env, c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("sluice %v: exit %d, stderr %q; want non-zero exit naming %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

func TestConfigFileAndPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("log-level: loud\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, dir, "", nil, "serve", "--config", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "--log-level") || !strings.Contains(r.stderr, cfg) {
		t.Fatalf("bad value in config file: exit %d stderr %q", r.code, r.stderr)
	}
	if err := os.WriteFile(cfg, []byte("no-such-key: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = sluice(t, dir, "", nil, "serve", "--config", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "no-such-key") {
		t.Fatalf("unknown config key: exit %d stderr %q", r.code, r.stderr)
	}
}

// TestServeAPIAndCLIShareStreams appends through S2's HTTP API and reads the same stream with
// the CLI (--basin), and the other way round: the daemon and library mode see one layout.
func TestServeAPIAndCLIShareStreams(t *testing.T) {
	dir := t.TempDir()
	base := startServe(t, dir, nil)
	do := apiCaller(t, base, "shared-basin")
	if code, body := do("POST", "/v1/basins", `{"basin":"shared-basin"}`); code != 201 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	if code, body := do("PUT", "/streams/events", `{"stream":"events","config":{}}`); code/100 != 2 {
		t.Fatalf("create stream: %d %s", code, body)
	}
	if code, body := do("POST", "/streams/events/records", `{"records":[{"body":"from-http"}]}`); code != 200 || !strings.Contains(body, `"end":{"seq_num":1`) {
		t.Fatalf("append: %d %s", code, body)
	}
	r := sluice(t, dir, "", nil, "read", "--basin", "shared-basin", "events", "--seq-num", "0")
	if r.code != 0 || !strings.Contains(r.stdout, `"body":"from-http"`) {
		t.Fatalf("CLI read of an API-written stream: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = sluice(t, dir, "from-cli\n", nil, "append", "--basin", "shared-basin", "events")
	if r.code != 0 {
		t.Fatalf("CLI append: exit %d stderr %s", r.code, r.stderr)
	}
	code, body := do("GET", "/streams/events/records?seq_num=0&count=10", "")
	if code != 200 || !strings.Contains(body, "from-http") || !strings.Contains(body, "from-cli") {
		t.Fatalf("API read of a CLI-written stream: %d %s", code, body)
	}
}

// apiCaller returns a function that sends a JSON request to the daemon at base, in basin, and
// returns the status and body; a token, if given, is sent as the bearer token.
func apiCaller(t *testing.T, base, basin string, token ...string) func(method, path, body string) (int, string) {
	return func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("S2-Basin", basin)
		req.Header.Set("Content-Type", "application/json")
		for _, tok := range token {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
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
