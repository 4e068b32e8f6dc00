package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// proc is a long-running sluice process (read --follow, consume) whose stdout lines arrive
// on a channel.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// start starts sluice with the backend's store flags; it is killed at the end of the test if
// still running.
func (c *cli) start(args ...string) *proc {
	c.t.Helper()
	p := &proc{t: c.t, lines: make(chan string, 100000), done: make(chan struct{})}
	p.cmd = exec.Command(sluiceBin, append(args, c.b.args...)...)
	p.cmd.Dir = c.dir
	p.cmd.Env = append(cleanEnv(), c.env...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		p.err = p.cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	c.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// next returns the next stdout line, failing the test if none comes within a minute.
func (p *proc) next() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("process ended (%v); stderr:\n%s", p.err, p.stderr.String())
		}
		return l
	case <-time.After(time.Minute):
		p.t.Fatalf("no output within a minute; stderr:\n%s", p.stderr.String())
	}
	return ""
}

// stop sends sig and waits for the exit code.
func (p *proc) stop(sig os.Signal) int {
	p.t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.t.Fatalf("process did not stop on %v; stderr:\n%s", sig, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// wait waits for the process to end by itself and returns its exit code.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		p.t.Fatalf("process did not end; stderr:\n%s", p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

type readRec struct {
	SeqNum    uint64     `json:"seq_num"`
	Timestamp uint64     `json:"timestamp"`
	Headers   [][]string `json:"headers"`
	Body      string     `json:"body"`
}

func seqs(rs []readRec) []uint64 {
	var out []uint64
	for _, r := range rs {
		out = append(out, r.SeqNum)
	}
	return out
}

func TestReadPositionsLimitsAndFormats(t *testing.T) {
	seed := testseed.Get(t)
	rng := mrand.New(mrand.NewPCG(seed, seed^1))
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "r", "--timestamping-uncapped")
		// 30 records with client timestamps 1000, 1010, ...; record i has body "rec-i".
		var in strings.Builder
		for i := range 30 {
			fmt.Fprintf(&in, `{"headers":[["i","%d"]],"body":"rec-%d","timestamp":%d}`+"\n", i, i, 1000+10*i)
		}
		c.ok(in.String(), "append", "r", "--format", "json")

		all := jsonLines[readRec](t, c.ok("", "read", "r").stdout)
		if len(all) != 30 {
			t.Fatalf("read returned %d records, want 30", len(all))
		}
		for i, r := range all {
			if r.SeqNum != uint64(i) || r.Timestamp != uint64(1000+10*i) || r.Body != fmt.Sprintf("rec-%d", i) ||
				len(r.Headers) != 1 || r.Headers[0][0] != "i" || r.Headers[0][1] != strconv.Itoa(i) {
				t.Fatalf("record %d = %+v", i, r)
			}
		}
		check := func(want []uint64, args ...string) {
			t.Helper()
			got := seqs(jsonLines[readRec](t, c.ok("", append([]string{"read", "r"}, args...)...).stdout))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("read %v = seq_nums %v, want %v", args, got, want)
			}
		}
		check([]uint64{5, 6, 7}, "--seq-num", "5", "--count", "3")
		check([]uint64{27, 28, 29}, "--tail-offset", "3")
		check([]uint64{10, 11}, "--timestamp", "1095", "--until", "1120")
		check(nil, "--seq-num", "30")
		// Each record is 8 + 2 + len("i") + len(value) + len(body) metered bytes: 18 for i < 10.
		check([]uint64{0, 1}, "--bytes", "40")
		// 0 is no limit, as count=0 and bytes=0 are in S2's API.
		check([]uint64{25, 26, 27, 28, 29}, "--seq-num", "25", "--count", "0")
		check([]uint64{25, 26, 27, 28, 29}, "--seq-num", "25", "--bytes", "0")
		c.fails("", []string{"--seq-num 31", "tail", "30", "--clamp"}, "read", "r", "--seq-num", "31")
		check(nil, "--seq-num", "31", "--clamp")
		c.fails("", []string{"seq-num", "timestamp"}, "read", "r", "--seq-num", "1", "--timestamp", "5")

		// raw: bodies only.
		if out := c.ok("", "read", "r", "--count", "2", "--format", "raw").stdout; out != "rec-0\nrec-1\n" {
			t.Fatalf("raw read = %q", out)
		}
		// trim: reads start at the trim point; command records are shown unless skipped.
		c.ok("", "trim", "r", "20")
		rs := jsonLines[readRec](t, c.ok("", "read", "r").stdout)
		if rs[0].SeqNum != 20 || len(rs) != 11 || rs[10].Headers[0][0] != "" || rs[10].Headers[0][1] != "trim" {
			t.Fatalf("after trim, read = %v (last %+v)", seqs(rs), rs[len(rs)-1])
		}
		check([]uint64{20, 21, 22, 23, 24, 25, 26, 27, 28, 29}, "--skip-commands")

		// base64 round trip of random binary records through read | append.
		c.ok("", "stream", "create", "bin")
		var b64 strings.Builder
		var bodies [][]byte
		for range 50 {
			body := make([]byte, rng.IntN(200))
			for i := range body {
				body[i] = byte(rng.UintN(256))
			}
			bodies = append(bodies, body)
			b64.WriteString(base64.StdEncoding.EncodeToString(body) + "\n")
		}
		c.ok(b64.String(), "append", "bin", "--format", "base64")
		dump := c.ok("", "read", "bin", "--format", "base64").stdout
		c.ok("", "stream", "create", "bin-copy")
		c.ok(dump, "append", "bin-copy", "--format", "base64")
		copied := jsonLines[readRec](t, c.ok("", "read", "bin-copy", "--format", "base64").stdout)
		if len(copied) != len(bodies) {
			t.Fatalf("copy holds %d records, want %d", len(copied), len(bodies))
		}
		orig := jsonLines[readRec](t, dump)
		for i, r := range copied {
			got, err := base64.StdEncoding.DecodeString(r.Body)
			if err != nil || !bytes.Equal(got, bodies[i]) || r.Timestamp != orig[i].Timestamp {
				t.Fatalf("copied record %d: body %x ts %d, want %x ts %d (%v)", i, got, r.Timestamp, bodies[i], orig[i].Timestamp, err)
			}
		}
		c.fails("", []string{`stream "nope"`, "does not exist"}, "read", "nope")
	})
}

func TestReadFollow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "live")
		c.ok("old\n", "append", "live")
		// Start after "old" by seq_num (a --tail-offset 0 start would race with the first
		// append below).
		p := c.start("read", "live", "--seq-num", "1", "--follow", "--format", "raw")
		// Appends made while the reader follows reach it, in order.
		for i := range 3 {
			c.ok(fmt.Sprintf("new-%d\n", i), "append", "live")
			if l := p.next(); l != fmt.Sprintf("new-%d", i) {
				t.Fatalf("followed line %d = %q", i, l)
			}
		}
		if code := p.stop(syscall.SIGINT); code != 0 {
			t.Fatalf("read --follow exited %d on SIGINT; stderr:\n%s", code, p.stderr.String())
		}
		// --follow with --count ends by itself.
		p = c.start("read", "live", "--seq-num", "3", "--follow", "--count", "2", "--format", "raw")
		c.ok("a\nb\nc\n", "append", "live")
		if l1, l2 := p.next(), p.next(); l1 != "new-2" || l2 != "a" {
			t.Fatalf("follow --count lines = %q %q", l1, l2)
		}
		if code := p.wait(); code != 0 {
			t.Fatalf("read --follow --count exited %d; stderr:\n%s", code, p.stderr.String())
		}
	})
}

func TestTailFollow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "s")
		p := c.start("tail", "s", "--follow", "--interval", "20ms")
		if l := p.next(); l != `{"tail":{"seq_num":0,"timestamp":0}}` {
			t.Fatalf("first tail line = %q", l)
		}
		c.ok("a\nb\n", "append", "s")
		// The tail moves to 2 (through 1 if the lines went in two appends), never backwards.
		for seen := uint64(0); seen != 2; {
			tl := decodeJSON[map[string]pos](t, p.next())
			if tl["tail"].SeqNum <= seen || tl["tail"].SeqNum > 2 {
				t.Fatalf("tail after %d = %v", seen, tl)
			}
			seen = tl["tail"].SeqNum
		}
		if code := p.stop(syscall.SIGINT); code != 0 {
			t.Fatalf("tail --follow exited %d on SIGINT; stderr:\n%s", code, p.stderr.String())
		}
	})
}

type inspectGroups struct {
	Groups map[string]struct {
		Epoch      uint64 `json:"epoch"`
		Checkpoint uint64 `json:"checkpoint"`
	} `json:"groups"`
}

func (c *cli) checkpoint(stream, group string) uint64 {
	c.t.Helper()
	return decodeJSON[inspectGroups](c.t, c.ok("", "inspect", stream).stdout).Groups[group].Checkpoint
}

func TestConsumeExec(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		var in strings.Builder
		for i := range 20 {
			fmt.Fprintf(&in, "job-%d\n", i)
		}
		c.ok(in.String(), "append", "q")
		out := filepath.Join(c.dir, "out.txt")

		// One record per run; all acknowledged; a second run finds nothing new.
		c.env = []string{"OUT=" + out}
		c.ok("", "consume", "q", "--group", "g2", "--stop-at-tail", "--format", "raw", "--exec", `tr -d '\n' >> "$OUT"; echo " $SLUICE_CONSUME_SEQ_NUM $SLUICE_CONSUME_COUNT" >> "$OUT"`)
		got, _ := os.ReadFile(out)
		lines := strings.Split(strings.TrimSpace(string(got)), "\n")
		if len(lines) != 20 || lines[0] != "job-0 0 1" || lines[19] != "job-19 19 1" {
			t.Fatalf("consumer output (%d lines):\n%s", len(lines), got)
		}
		if cp := c.checkpoint("q", "g2"); cp != 20 {
			t.Fatalf("checkpoint = %d, want 20", cp)
		}
		c.ok("", "consume", "q", "--group", "g2", "--stop-at-tail", "--exec", `cat >> "$OUT"`)
		if again, _ := os.ReadFile(out); !bytes.Equal(again, got) {
			t.Fatalf("a resumed consumer processed records again:\n%s", again)
		}

		// Batches: --batch 8 pipes 8, 8, 4 records.
		os.Remove(out)
		c.ok("", "consume", "q", "--group", "batched", "--batch", "8", "--stop-at-tail", "--exec", `echo "$SLUICE_CONSUME_SEQ_NUM $SLUICE_CONSUME_COUNT $(wc -l)" >> "$OUT"`)
		if got, _ := os.ReadFile(out); strings.TrimSpace(string(got)) != "0 8 8\n8 8 8\n16 4 4" {
			t.Fatalf("batched runs:\n%s", got)
		}

		// A command failing on job-7: retried --max-attempts times, then consume stops with
		// exit 1; jobs 0..6 are acknowledged, job-7 is not.
		os.Remove(out)
		c.fails("", []string{"--exec command failed", "records 7..7", "--max-attempts", "exit status 3"},
			"consume", "q", "--group", "flaky", "--format", "raw", "--max-attempts", "3", "--backoff", "1ms",
			"--exec", `read line; echo "$line $SLUICE_CONSUME_ATTEMPT" >> "$OUT"; [ "$line" != job-7 ] || exit 3`)
		if cp := c.checkpoint("q", "flaky"); cp != 7 {
			t.Fatalf("checkpoint after failure = %d, want 7", cp)
		}
		got, _ = os.ReadFile(out)
		if !strings.HasSuffix(string(got), "job-6 1\njob-7 1\njob-7 2\njob-7 3\n") {
			t.Fatalf("attempts:\n%s", got)
		}
		// The restarted member starts at the failed record.
		os.Remove(out)
		c.ok("", "consume", "q", "--group", "flaky", "--stop-at-tail", "--format", "raw", "--exec", `cat >> "$OUT"`)
		if got, _ := os.ReadFile(out); !strings.HasPrefix(string(got), "job-7\njob-8\n") {
			t.Fatalf("restarted member output:\n%s", got)
		}

		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"consume", "q", "--exec", "cat"}, "--group"},
			{[]string{"consume", "q", "--group", "g"}, "--exec"},
			{[]string{"consume", "q", "--group", "g", "--exec", "cat", "--batch", "0"}, "--batch"},
			{[]string{"consume", "q", "--group", "g", "--exec", "cat", "--max-attempts", "-1"}, "--max-attempts"},
			{[]string{"consume", "nope", "--group", "g", "--exec", "cat"}, "does not exist"},
		} {
			c.fails("", []string{tc.want}, tc.args...)
		}
	})
}

func TestConsumeFollowSIGTERMAndFencing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		// A following member; each record echoes to its stdout (the command ignores SIGTERM).
		// SIGTERM arrives while the member waits at the tail, with no command running: it
		// exits 0 and writes its acknowledgements. (Forwarding SIGTERM to a running command
		// and --stop-timeout are not exercised here.)
		a := c.start("consume", "q", "--group", "g", "--format", "raw", "--ack-interval", "1h", "--exec", "trap '' TERM; cat")
		c.ok("r0\nr1\nr2\n", "append", "q")
		for i := range 3 {
			if l := a.next(); l != fmt.Sprintf("r%d", i) {
				t.Fatalf("consumer line %d = %q", i, l)
			}
		}
		// SIGTERM: exit 0 and the acknowledgements are written (--ack-interval is 1h).
		if code := a.stop(syscall.SIGTERM); code != 0 {
			t.Fatalf("consume exited %d on SIGTERM; stderr:\n%s", code, a.stderr.String())
		}
		if cp := c.checkpoint("q", "g"); cp != 3 {
			t.Fatalf("checkpoint after SIGTERM = %d, want 3", cp)
		}

		// A newer member fences the older one, which exits 1 naming the takeover.
		a = c.start("consume", "q", "--group", "g", "--format", "raw", "--exec", "cat")
		c.ok("r3\n", "append", "q")
		if l := a.next(); l != "r3" {
			t.Fatalf("consumer line = %q", l)
		}
		c.ok("", "consume", "q", "--group", "g", "--stop-at-tail", "--exec", "cat")
		c.ok("r4\n", "append", "q")
		if code := a.wait(); code != 1 || !strings.Contains(a.stderr.String(), "another member took over") {
			t.Fatalf("fenced member exited %d; stderr:\n%s", code, a.stderr.String())
		}
	})
}

// TestReadRawLeavesCommandsOut: --format raw prints bodies alone, so a fence's token or a
// trim's 8 bytes would pass for lines of data; raw leaves command records out, and json
// still shows them. consume refuses --include-commands with raw.
func TestReadRawLeavesCommandsOut(t *testing.T) {
	dir := t.TempDir()
	run := func(stdin string, args ...string) string {
		t.Helper()
		return sluiceOK(t, dir, stdin, nil, args...)
	}
	run("a\nb\n", "append", "s", "--create")
	run("", "fence", "s", "token-1")
	run("", "trim", "s", "1")
	run("c\n", "append", "s", "--fencing-token", "token-1")
	if out := run("", "read", "s", "--format", "raw"); out != "b\nc\n" {
		t.Errorf("read --format raw = %q, want the data lines b and c alone", out)
	}
	if out := run("", "read", "s"); strings.Count(out, `["",`) != 2 {
		t.Errorf("read (json) = %q, want the fence and the trim shown", out)
	}
	r := sluice(t, dir, "", nil, "consume", "s", "--group", "g", "--exec", "cat", "--format", "raw", "--include-commands", "--stop-at-tail")
	if r.code == 0 || !strings.Contains(r.stderr, "--include-commands needs --format json or base64") {
		t.Errorf("consume --include-commands --format raw: exit %d, stderr %q", r.code, r.stderr)
	}
}
