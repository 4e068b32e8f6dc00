package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeGCGracePeriodErrorNamesFlag: README: "Errors name the flag and where the bad
// value came from". A --gc-grace-period the daemon cannot use (48h and more: the producers'
// commit deadline, half of it, must stay under the 24h producer-table expiry) is refused with
// a message that names --gc-grace-period (it once spoke of an internal "commit deadline").
func TestServeGCGracePeriodErrorNamesFlag(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, dir, "", nil, "serve", "--listen", "127.0.0.1:0", "--store", "mem://", "--gc-grace-period", "48h")
	if r.code == 0 {
		t.Fatalf("serve --gc-grace-period 48h: exit 0")
	}
	if !strings.Contains(r.stderr, "--gc-grace-period") {
		t.Errorf("serve --gc-grace-period 48h: stderr %q does not name --gc-grace-period", strings.TrimSpace(r.stderr))
	}
}

// TestServeWarnsOfNewStoreDir: serve may start on a store directory that does not exist yet
// (it makes it), but warns that it serves a new, empty store, so that a mistyped --store is
// seen; an existing directory gets no such warning.
func TestServeWarnsOfNewStoreDir(t *testing.T) {
	dir := t.TempDir()
	logs := func(store string) string {
		cmd := exec.Command(sluiceBin, "serve", "--listen", "127.0.0.1:0", "--store", store)
		cmd.Dir = dir
		cmd.Env = cleanEnv()
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "sluice serving") {
				break
			}
		}
		_ = cmd.Process.Signal(os.Interrupt)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("serve --store %s: %v\n%s", store, err, out.String())
		}
		return out.String()
	}
	typo := filepath.Join(dir, "typo-dir")
	if out := logs(typo); !strings.Contains(out, "did not exist") || !strings.Contains(out, typo) {
		t.Errorf("serve on a new directory: no warning naming it in\n%s", out)
	}
	if _, err := os.Stat(typo); err != nil {
		t.Errorf("serve did not make the store directory: %v", err)
	}
	if out := logs(typo); strings.Contains(out, "did not exist") {
		t.Errorf("serve on an existing directory warned:\n%s", out)
	}
}

// TestServeDeliveryTimeoutFlag: --delivery-timeout (and SLUICE_DELIVERY_TIMEOUT) takes a
// duration, and a bad one is refused with a message that names the flag; --help gives the
// default.
func TestServeDeliveryTimeoutFlag(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, dir, "", nil, "serve", "--listen", "127.0.0.1:0", "--store", "mem://", "--delivery-timeout", "-1s")
	if r.code == 0 || !strings.Contains(r.stderr, "delivery-timeout") {
		t.Errorf("serve --delivery-timeout -1s: exit %d, stderr %q; want an error naming --delivery-timeout", r.code, strings.TrimSpace(r.stderr))
	}
	r = sluice(t, dir, "", []string{"SLUICE_DELIVERY_TIMEOUT=soon"}, "serve", "--listen", "127.0.0.1:0", "--store", "mem://")
	if r.code == 0 || !strings.Contains(r.stderr, "delivery-timeout") || !strings.Contains(r.stderr, "SLUICE_DELIVERY_TIMEOUT") {
		t.Errorf("SLUICE_DELIVERY_TIMEOUT=soon: exit %d, stderr %q; want an error naming the flag and the variable", r.code, strings.TrimSpace(r.stderr))
	}
	r = sluice(t, dir, "", nil, "serve", "--help")
	line := ""
	for l := range strings.Lines(r.stdout) {
		if strings.Contains(l, "--delivery-timeout duration") {
			line = l
		}
	}
	if r.code != 0 || !strings.Contains(line, "(default 4s)") {
		t.Errorf("serve --help: exit %d, no --delivery-timeout line with its default 4s:\n%s", r.code, r.stdout)
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
