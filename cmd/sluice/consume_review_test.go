package main

import (
	"strings"
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
