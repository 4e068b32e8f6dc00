package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConsumeFencedWhileRetryingExits: README "Starting a second member of the same
// group fences the first, which exits 1", and consume --help "a member that finds itself
// fenced exits 1". A member whose command keeps failing with --max-attempts 0 reads and
// acknowledges nothing; it checks the manifest before each retry, so once a second member
// has taken over it exits instead of running the command on that record forever.
func TestConsumeFencedWhileRetryingExits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		c.ok("r0\n", "append", "q")
		a := c.start("consume", "q", "--group", "g", "--format", "raw", "--max-attempts", "0",
			"--backoff", "20ms", "--max-backoff", "20ms", "--ack-interval", "100ms",
			"--exec", `cat; exit 3`)
		if l := a.next(); l != "r0" {
			t.Fatalf("first member's first attempt piped %q", l)
		}
		// The second member fences the first, processes r0 and stops.
		c.ok("", "consume", "q", "--group", "g", "--stop-at-tail", "--exec", "cat >/dev/null")
		if cp := c.checkpoint("q", "g"); cp != 1 {
			t.Fatalf("checkpoint after the second member = %d, want 1", cp)
		}
		// The fenced member should now exit 1 ("another member took over"); give it far more
		// than its --ack-interval and the consumer's poll interval.
		select {
		case <-a.done:
			if code := a.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(a.stderr.String(), "another member took over") {
				t.Fatalf("fenced member exited %d; stderr:\n%s", code, a.stderr.String())
			}
		case <-time.After(15 * time.Second):
			n := 0
			for len(a.lines) > 0 {
				<-a.lines
				n++
			}
			t.Fatalf("the fenced member is still running 15s after a newer member took over and processed r0; "+
				"it ran the command on r0 %d more times meanwhile", n)
		}
	})
}

// TestConsumeSIGINTStartsNoNewCommand: consume --help "On SIGINT/SIGTERM it sends SIGTERM to
// a running CMD, waits up to --stop-timeout for it (its records are acknowledged if it exits
// 0), writes the acknowledgements and exits 0." When the running command exits 0 after the
// signal, consume acknowledges it and starts no command for the next record.
func TestConsumeSIGINTStartsNoNewCommand(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		var in strings.Builder
		for i := range 10 {
			fmt.Fprintf(&in, "r%d\n", i)
		}
		c.ok(in.String(), "append", "q")
		log := filepath.Join(c.dir, "started.txt")
		c.env = []string{"LOG=" + log}
		// r0's command: traps SIGTERM (finishes its work and exits 0), tells the test it runs,
		// and waits in short sleeps, after each of which the shell runs a pending trap. Every
		// command logs that it started. (Not a background sleep killed by the trap: a kill
		// that reaches the forked child before it runs sleep is lost, and the orphan holds
		// consume's stdout open.)
		a := c.start("consume", "q", "--group", "g", "--format", "raw", "--ack-interval", "1h", "--exec",
			`read l; echo "start $l" >> "$LOG"; if [ "$l" = r0 ]; then trap 'exit 0' TERM; echo r0; while :; do sleep 0.1; done; fi`)
		if l := a.next(); l != "r0" {
			t.Fatalf("consumer line = %q", l)
		}
		if code := a.stop(syscall.SIGINT); code != 0 {
			t.Fatalf("consume exited %d on SIGINT; stderr:\n%s", code, a.stderr.String())
		}
		if cp := c.checkpoint("q", "g"); cp != 1 {
			t.Errorf("checkpoint after SIGINT = %d, want 1 (r0's command exited 0)", cp)
		}
		started, _ := os.ReadFile(log)
		if got := strings.TrimSpace(string(started)); got != "start r0" || strings.Contains(a.stderr.String(), "seq_num=1 ") {
			t.Errorf("after SIGINT consume started the command for more records; commands that got as far as logging:\n%s\nstderr:\n%s",
				started, a.stderr.String())
		}
	})
}
