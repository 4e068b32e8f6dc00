package bench

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// TestRunStreamsLeavesNothingRunning: a short row of 5 streams on a memory store acks every
// append of its window with none failed, counts PUTs, and when RunStreams returns every
// goroutine it started (daemon, senders, monitor, HTTP connections) has ended.
func TestRunStreamsLeavesNothingRunning(t *testing.T) {
	before := goroutineIDs()
	row, err := RunStreams(t.Context(), objectstore.NewMemStore(), StreamsConfig{
		Streams: 5, Mode: "manifest", Rate: 50, Warmup: 200 * time.Millisecond, Duration: 600 * time.Millisecond,
		RecordBytes: 10, StoreLatency: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if row.Appends != 30 || row.Acked != row.Appends || row.FailuresTotal != 0 || row.PutsPerS <= 0 {
		t.Errorf("%d of %d acked, failures %v, %v PUTs/s: want all 30 acked, none failed, PUTs", row.Acked, row.Appends, row.Failures, row.PutsPerS)
	}
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left = left[:0]
		for id, stack := range goroutineIDs() {
			if _, ok := before[id]; !ok {
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

// TestRunStreamsRefusesABadConfig: every problem is reported, before anything starts.
func TestRunStreamsRefusesABadConfig(t *testing.T) {
	_, err := RunStreams(t.Context(), objectstore.NewMemStore(), StreamsConfig{Mode: "nope", RecordBytes: 0})
	if !errors.Is(err, ErrInvalidStreamsConfig) {
		t.Fatalf("RunStreams = %v, want ErrInvalidStreamsConfig", err)
	}
	for _, want := range []string{"streams 0", `mode "nope"`, "rate 0", "duration 0", "record bytes 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// goroutineIDs maps each running goroutine ("goroutine 12") to its stack.
func goroutineIDs() map[string]string {
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
