package daemon_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// checkNoLeaks notes the goroutines running now; the function it returns fails the test if
// others are still running, so that every goroutine a daemon starts is shown to have ended
// after Close. Goroutines on their way out (a closed connection's) get a few seconds to go:
// the check passes as soon as they have, and fails with their stacks if they never do.
func checkNoLeaks(t *testing.T) func() {
	t.Helper()
	before := goroutines()
	return func() {
		t.Helper()
		var left []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			left = left[:0]
			for id, stack := range goroutines() {
				if _, ok := before[id]; !ok && !strings.Contains(stack, "checkNoLeaks") {
					left = append(left, stack)
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > 0 {
			t.Errorf("%d goroutines left running:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
	}
}

// goroutines maps each running goroutine's id ("goroutine 12") to its stack.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := strings.Cut(string(g), " [")
		out[head] = string(g)
	}
	return out
}
