package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/s3"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

// sluiceBin builds the sluice command once per test binary.
func sluiceBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "sluice-crashtest-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "sluice")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/sluice-dev/sluice/cmd/sluice").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func cyclesFor(t *testing.T) int {
	if v := os.Getenv("SLUICE_CRASHTEST_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_CRASHTEST_CYCLES=%q is not a positive number", v)
		}
		return n
	}
	if testing.Short() {
		return 15
	}
	return 60
}

// TestCrashFile runs the crash cycles against the file store.
func TestCrashFile(t *testing.T) {
	if testing.Short() {
		t.Log("-short: fewer cycles")
	}
	runCrash(t, "file://"+t.TempDir(), plain)
}

// TestCrashFileCommitter runs the crash cycles against the file store with a committer
// daemon (sluice serve) that the producers send their commits to, and that is
// SIGKILLed and restarted among the others.
func TestCrashFileCommitter(t *testing.T) {
	runCrash(t, "file://"+t.TempDir(), withCommitter)
}

// TestCrashS3 runs the crash cycles against the S3-compatible server of SLUICE_TEST_S3_URL,
// under a prefix of its own (removed afterwards).
func TestCrashS3(t *testing.T) {
	storeURL := s3CrashURL(t)
	runCrash(t, storeURL, plain)
	t.Run("committer", func(t *testing.T) { runCrash(t, subURL(t, storeURL, "committer"), withCommitter) })
}

// TestCrashCommitterPausedPastLease: four "sluice append --committer" producers commit
// through a committer daemon that is, at seeded random moments, SIGKILLed and restarted at
// its URL, and stopped with SIGSTOP for longer than its lease (--committer-lease 1s), then
// continued. While it is stopped the producers, after --committer-timeout, commit directly
// and keep acknowledging (each pause must see the stream's tail move); when it wakes, its
// write of the manifest it read before the pause fails the If-Match, so nothing it commits
// is stale. The checker then finds every acknowledged record once, at its acknowledged
// position. On the file store, and on S3, GCS and Azure when their emulators are set.
func TestCrashCommitterPausedPastLease(t *testing.T) {
	t.Run("file", func(t *testing.T) { runCrash(t, "file://"+t.TempDir(), pausedCommitter) })
	t.Run("s3", func(t *testing.T) { runCrash(t, s3CrashURL(t), pausedCommitter) })
	t.Run("gcs", func(t *testing.T) { runCrash(t, gcsCrashURL(t), pausedCommitter) })
	t.Run("azure", func(t *testing.T) { runCrash(t, azureCrashURL(t), pausedCommitter) })
}

// TestCrashJournalDaemonKilled runs the crash cycles with a committer daemon in journal mode
// (serve --journal), SIGKILLed and restarted among the others: two producers append through
// its S2 API, so their records live only in its journal windows until a checkpoint folds
// them into the manifest, and one uploads its own batches and commits through it. A killed
// daemon leaves windows the manifest does not show; the direct commits meanwhile, and the
// restarted daemon, fence its journal and seal those windows in. Every acknowledged record
// must be in the stream once, at its position, with contiguous seq_nums. On the file store,
// and on S3 when SLUICE_TEST_S3_URL is set.
func TestCrashJournalDaemonKilled(t *testing.T) {
	t.Run("file", func(t *testing.T) { runCrash(t, "file://"+t.TempDir(), journalDaemon) })
	t.Run("s3", func(t *testing.T) { runCrash(t, s3CrashURL(t), journalDaemon) })
}

// TestCrashJournalCommitterPausedPastLease is TestCrashCommitterPausedPastLease with the
// daemon in journal mode (checkpoints every --committer-lease/2), one of its four producers
// appending through its S2 API. While the daemon is stopped past its lease the direct
// commits fence its journal; once it wakes, its next window fails create-only on the
// fence, so nothing of that window is acknowledged (the daemon answers its requests as not
// committed and starts a new journal), and the checker finds every acknowledged record
// once, at its position. On the file store and on S3 when SLUICE_TEST_S3_URL is set.
func TestCrashJournalCommitterPausedPastLease(t *testing.T) {
	t.Run("file", func(t *testing.T) { runCrash(t, "file://"+t.TempDir(), pausedJournal) })
	t.Run("s3", func(t *testing.T) { runCrash(t, s3CrashURL(t), pausedJournal) })
}

// s3CrashURL is a store URL under a new prefix of SLUICE_TEST_S3_URL (removed when t
// ends), its bucket made; t is skipped without the variable, and failed under CI=true.
func s3CrashURL(t *testing.T) string {
	raw := os.Getenv("SLUICE_TEST_S3_URL")
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SLUICE_TEST_S3_URL is not set and CI=true")
		}
		t.Skip("SLUICE_TEST_S3_URL not set")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("SLUICE_TEST_S3_URL: %v", err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + fmt.Sprintf("/crashtest-%d-%d", time.Now().UnixNano(), os.Getpid())
	storeURL := u.String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	loc, err := storeurl.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3.New(ctx, loc.S3Config())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	t.Cleanup(func() {
		if err := removeAll(storeURL); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return storeURL
}

// subURL is storeURL with sub appended to its path (a prefix under its prefix).
func subURL(t *testing.T, storeURL, sub string) string {
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + sub
	return u.String()
}

// scenario is what a crash run starts and does to its processes.
type scenario struct {
	producers int
	// committer: the producers send their commits to a committer daemon, which is
	// SIGKILLed and restarted at its URL among the others.
	committer bool
	// pause: the committer is also stopped (SIGSTOP) for longer than its lease, then
	// continued; the committer's lease, and the producers' and the consumer's wait for its
	// answers, are short.
	pause bool
	// journal: the daemon runs "serve --journal": one create-only window object per commit
	// window for the stream, its manifest checkpointed every lease/2; whoever writes the
	// stream after it (a direct commit, its next incarnation) fences and seals its journal.
	journal bool
	// viaAPI: the first viaAPI producers append through the daemon's S2 API ("sluice
	// --endpoint ... append"), so their records are carried inside its journal windows (no
	// batch object of theirs); the others use the store, committing through the daemon
	// (append --committer). Such a producer fails when the daemon dies or is stopped under
	// it (a failed append is not retried): then, and only then, it is restarted.
	viaAPI int
}

var (
	plain           = scenario{producers: 3}
	withCommitter   = scenario{producers: 3, committer: true}
	pausedCommitter = scenario{producers: 4, committer: true, pause: true}
	// Journal mode: two producers through the daemon's S2 API (records in its windows) and
	// one that uploads its own batches and commits through it, or directly (fencing and
	// sealing the journal) while it is down.
	journalDaemon = scenario{producers: 3, committer: true, journal: true, viaAPI: 2}
	// pausedCommitter in journal mode, one of its producers through the daemon's S2 API: its
	// appends wait in the stopped daemon, whose next window, once it wakes, fails
	// create-only on the fence the direct writers left: nothing of it may be acknowledged.
	pausedJournal = scenario{producers: 4, committer: true, pause: true, journal: true, viaAPI: 1}
)

// journalCycles caps the cycles of the journal daemon runs in the suite's form (without
// SLUICE_CRASHTEST_CYCLES): about 22 kills, at least 2 of the daemon, in 5 to 10 s a store.
const journalCycles = 15

// journalBasin is the basin of the stream when producers go through the daemon's S2 API,
// which serves only the streams of basins.
const journalBasin = "crashtest"

// The pause scenario's timings: the committer's lease, the producers' and the consumer's
// wait for its answer, and how long past its lease a pause lasts (at least pauseMin).
const (
	pauseLease   = time.Second
	pauseTimeout = time.Second
	pauseMin     = pauseLease + time.Second
	pauseExtra   = 1500 * time.Millisecond // random, on top of pauseMin
	// pauseGrace: a pause that has seen no commit yet goes on up to this much longer, short
	// of the default --committer-timeout (10 s): producers that wait that long still fail.
	pauseGrace = 5 * time.Second
)

// ackLine is one line "sluice append" prints per acknowledged append.
type ackLine struct {
	Start struct {
		SeqNum    uint64 `json:"seq_num"`
		Timestamp uint64 `json:"timestamp"`
	} `json:"start"`
	End struct {
		SeqNum uint64 `json:"seq_num"`
	} `json:"end"`
}

// readLine is one line "sluice read --format json" prints.
type readLine struct {
	SeqNum    uint64 `json:"seq_num"`
	Timestamp uint64 `json:"timestamp"`
	Body      string `json:"body"`
}

// proc is one running sluice process, in its own process group (so SIGKILL takes its
// children, the consumer's --exec commands, with it).
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout string // file
	stderr string // file
	done   chan struct{}
	err    error // of Wait, once done is closed
}

func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// producerSlot is one producer "machine": a sequence of append processes.
type producerSlot struct {
	id    int
	inst  int
	cur   *proc
	lines []string // lines sent to cur
	// writer of cur's stdin
	stopWrite chan struct{}
	writeDone chan struct{}
	mu        sync.Mutex

	sent  map[string]bool // every line ever sent by this slot
	acked []ackedRecord

	// api: the slot appends through the daemon's S2 API (scenario.viaAPI); mark is the
	// run's daemonEvents when cur started: cur may fail only once it has moved on.
	api  bool
	mark int
}

type ackedRecord struct {
	body string
	seq  uint64
	ts   uint64 // of the append's first record, 0 for the others
}

type crashRun struct {
	t        *testing.T
	bin      string
	storeURL string
	dir      string
	rng      *rand.Rand
	slots    []*producerSlot
	consumer *proc
	cinst    int
	cLog     string
	kills    int
	minKills int // fewer kills than this, and the run proved little
	comKills int
	sc       scenario
	// With a committer: its daemon, the address it listens on, and its instance count.
	committer     *proc
	committerAddr string
	comInst       int
	// With pauses: while the committer is stopped, when it is to continue and the tail
	// then; the pauses that ended, and the records committed while it was stopped.
	paused        bool
	pauseEnd      time.Time
	pauseTail     uint64
	pauses        int
	pausedRecords uint64
	pauseKills    int  // kills of a stopped committer
	pauseLocked   bool // the committer was stopped holding a file store lock
	lockStalls    int  // pauses the file store's lock stalled
	// basin: the stream's basin ("" for the root namespace). daemonEvents are what may
	// fail an append through the daemon ("kill", "stop", "cont"), in order; apiFails counts
	// the producers through it that failed so (and were restarted), pauseFails those of them
	// with only a stop and a continue in their life, fencedFails those told their append was
	// not committed because the daemon's journal was fenced.
	basin        string
	daemonEvents []string
	apiFails     int
	pauseFails   int
	fencedFails  int
}

// sluiceArgs are args for a sluice command on the run's stream: with a basin, --basin
// follows them (after the command's own flags and arguments, as cobra allows).
func (r *crashRun) sluiceArgs(args ...string) []string {
	if r.basin != "" {
		args = append(args, "--basin", r.basin)
	}
	return args
}

// sluice is a sluice command on the store, on the run's stream (sluiceArgs).
func (r *crashRun) sluice(args ...string) *exec.Cmd {
	return exec.Command(r.bin, append([]string{"--store", r.storeURL}, r.sluiceArgs(args...)...)...)
}

func (r *crashRun) start(name string, stdin bool, args ...string) *proc {
	r.t.Helper()
	return r.startAt(name, stdin, []string{"--store", r.storeURL}, r.sluiceArgs(args...)...)
}

// startAt starts a sluice process with the global flags where (--store or --endpoint).
func (r *crashRun) startAt(name string, stdin bool, where []string, args ...string) *proc {
	r.t.Helper()
	p := &proc{name: name, stdout: filepath.Join(r.dir, name+".out"), stderr: filepath.Join(r.dir, name+".err"), done: make(chan struct{})}
	out, err := os.Create(p.stdout)
	if err != nil {
		r.t.Fatal(err)
	}
	errf, err := os.Create(p.stderr)
	if err != nil {
		r.t.Fatal(err)
	}
	p.cmd = exec.Command(r.bin, append(append(where, "--log-level", "warn"), args...)...)
	p.cmd.Stdout, p.cmd.Stderr = out, errf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if stdin {
		p.stdin, err = p.cmd.StdinPipe()
		if err != nil {
			r.t.Fatal(err)
		}
	}
	if err := p.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	out.Close()
	errf.Close()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	r.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.kill() // the test ended early; SIGKILL ends a stopped process too
		}
	})
	return p
}

func (r *crashRun) startProducer(s *producerSlot) {
	s.inst++
	name := fmt.Sprintf("s%d.i%d", s.id, s.inst)
	linger := []string{"0s", "1ms", "5ms", "20ms"}[r.rng.IntN(4)]
	s.mark = len(r.daemonEvents)
	if s.api {
		// Through the daemon: no --create (the stream exists), no --committer (it commits).
		s.cur = r.startAt(name, true, []string{"--endpoint", "http://" + r.committerAddr}, r.sluiceArgs("append", "crash", "--linger", linger)...)
	} else {
		args := []string{"append", "crash", "--create", "--linger", linger}
		if r.committerAddr != "" {
			args = append(args, "--committer", "http://"+r.committerAddr)
		}
		if r.sc.pause {
			args = append(args, "--committer-timeout", pauseTimeout.String())
		}
		s.cur = r.start(name, true, args...)
	}
	s.lines = nil
	s.stopWrite, s.writeDone = make(chan struct{}), make(chan struct{})
	wrng := rand.New(rand.NewPCG(r.rng.Uint64(), r.rng.Uint64()))
	go s.write(name, wrng)
}

// write feeds the current process lines in bursts until stopped or the pipe breaks.
func (s *producerSlot) write(name string, rng *rand.Rand) {
	defer close(s.writeDone)
	w := s.cur.stdin
	for n := 0; ; {
		var buf bytes.Buffer
		var burst []string
		for range 1 + rng.IntN(30) {
			line := fmt.Sprintf("%s.n%06d", name, n)
			n++
			burst = append(burst, line)
			buf.WriteString(line + "\n")
		}
		// Record before writing: a line the process may have read must be known.
		s.mu.Lock()
		s.lines = append(s.lines, burst...)
		for _, l := range burst {
			s.sent[l] = true
		}
		s.mu.Unlock()
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		t := time.NewTimer(time.Duration(rng.IntN(20)) * time.Millisecond)
		select {
		case <-s.stopWrite:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// harvest reads the ack log of the slot's finished process and maps the acks to the lines
// it was sent: acks come in order and each covers the next End-Start lines.
func (r *crashRun) harvest(s *producerSlot) {
	r.t.Helper()
	data, err := os.ReadFile(s.cur.stdout)
	if err != nil {
		r.t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := 0
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if !strings.HasSuffix(l, "\n") {
			if l != "" && i != len(lines)-1 {
				r.t.Errorf("%s: unterminated ack line %q", s.cur.name, l)
			}
			continue // the process died while printing it: not an ack anyone saw
		}
		var a ackLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			r.t.Errorf("%s: bad ack line %q: %v", s.cur.name, l, err)
			continue
		}
		n := int(a.End.SeqNum - a.Start.SeqNum)
		if a.End.SeqNum < a.Start.SeqNum || next+n > len(s.lines) {
			r.t.Errorf("%s: ack %s covers %d records, only %d of %d lines left", s.cur.name, strings.TrimSpace(l), n, len(s.lines)-next, len(s.lines))
			return
		}
		for k := range n {
			rec := ackedRecord{body: s.lines[next+k], seq: a.Start.SeqNum + uint64(k)}
			if k == 0 {
				rec.ts = a.Start.Timestamp
			}
			s.acked = append(s.acked, rec)
		}
		next += n
	}
}

func (r *crashRun) startConsumer() {
	r.cinst++
	name := fmt.Sprintf("c.i%d", r.cinst)
	batch := strconv.Itoa(1 + r.rng.IntN(50))
	ackInterval := []string{"10ms", "100ms", "500ms"}[r.rng.IntN(3)]
	args := []string{"consume", "crash", "--group", "g", "--batch", batch, "--ack-interval", ackInterval,
		"--backoff", "10ms", "--max-attempts", "0", "--exec", "cat >> " + shellQuote(r.cLog)}
	if r.sc.pause {
		args = append(args, "--committer-timeout", pauseTimeout.String())
	}
	r.consumer = r.start(name, false, args...)
}

// startCommitter starts the committer daemon on its address and waits until it answers.
func (r *crashRun) startCommitter() {
	r.t.Helper()
	r.comInst++
	args := []string{"serve", "--listen", r.committerAddr, "--no-gc"} // a committer at the URL of --listen
	if r.sc.pause {
		args = append(args, "--committer-lease", pauseLease.String())
	}
	if r.sc.journal {
		args = append(args, "--journal")
	}
	r.committer = r.startAt(fmt.Sprintf("committer.i%d", r.comInst), false, []string{"--store", r.storeURL}, args...)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if res, err := http.Get("http://" + r.committerAddr + "/health"); err == nil {
			res.Body.Close()
			return
		}
		select {
		case <-r.committer.done:
			r.t.Fatalf("the committer exited: %v\n%s", r.committer.err, tailFile(r.committer.stderr))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.t.Fatal("the committer did not answer within 30 s")
		}
	}
}

// pauseCommitter stops the committer (SIGSTOP) for longer than its lease, noting the tail.
func (r *crashRun) pauseCommitter() {
	r.t.Helper()
	if err := syscall.Kill(-r.committer.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		r.t.Fatalf("SIGSTOP %s: %v", r.committer.name, err)
	}
	r.paused = true
	r.daemonEvents = append(r.daemonEvents, "stop")
	r.pauseEnd = time.Now().Add(pauseMin + time.Duration(r.rng.Int64N(int64(pauseExtra))))
	r.pauseTail = r.tail()
	r.pauseLocked = strings.HasPrefix(r.storeURL, "file:") && holdsFlock(r.committer.cmd.Process.Pid)
}

// holdsFlock reports whether process pid holds a flock (in /proc/locks). The file store
// takes one around each conditional write of a key (its stripe of 64); a process stopped
// while it holds it stops the other writers of those keys until it continues or dies.
func holdsFlock(pid int) bool {
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	for l := range strings.Lines(string(data)) {
		f := strings.Fields(l)
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's has "->" after the id.
		if len(f) >= 5 && f[1] == "FLOCK" && f[4] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// resumeCommitter continues the stopped committer (SIGCONT) once its pause is over. The
// producers must have committed without it meanwhile: the tail moved.
func (r *crashRun) resumeCommitter() {
	r.t.Helper()
	time.Sleep(time.Until(r.pauseEnd))
	tail := r.tail()
	// On a loaded machine the first direct commit may come late: keep the committer stopped
	// a while longer rather than take a slow machine for a stalled producer.
	for tail <= r.pauseTail && !r.pauseLocked && time.Since(r.pauseEnd) < pauseGrace {
		time.Sleep(100 * time.Millisecond)
		tail = r.tail()
	}
	if late := time.Since(r.pauseEnd); late > time.Second {
		r.t.Logf("pause %d: stopped %v longer than planned, waiting for the tail to move", r.pauses+1, late.Round(time.Millisecond))
	}
	if err := syscall.Kill(-r.committer.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		r.t.Fatalf("SIGCONT %s: %v", r.committer.name, err)
	}
	r.paused = false
	r.daemonEvents = append(r.daemonEvents, "cont")
	r.pauses++
	switch {
	case tail > r.pauseTail:
	case r.pauseLocked:
		// Stopped inside a write on the file store, it held the flock of the manifest's
		// stripe: the other writers waited for it (docs/guarantees.md, known limits).
		r.lockStalls++
		r.t.Logf("pause %d: the tail stayed at %d: the committer was stopped holding a file store lock", r.pauses, tail)
	default:
		r.t.Errorf("pause %d: the tail stayed at %d while the committer was stopped: the producers did not commit without it", r.pauses, tail)
	}
	r.pausedRecords += tail - min(tail, r.pauseTail)
}

// tail is the stream's tail, from "sluice tail".
func (r *crashRun) tail() uint64 {
	r.t.Helper()
	out, err := r.sluice("tail", "crash").Output()
	var res struct {
		Tail struct {
			SeqNum uint64 `json:"seq_num"`
		} `json:"tail"`
	}
	if err != nil || json.Unmarshal(out, &res) != nil {
		r.t.Fatalf("sluice tail: %v: %q", err, out)
	}
	return res.Tail.SeqNum
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// stopProducer ends a slot's current process: SIGKILL, or a clean end of input.
func (r *crashRun) stopProducer(s *producerSlot, kill bool) {
	r.t.Helper()
	if kill {
		s.cur.kill()
		close(s.stopWrite)
		<-s.writeDone
	} else {
		close(s.stopWrite)
		<-s.writeDone
		s.cur.stdin.Close()
		select {
		case <-s.cur.done:
		case <-time.After(2 * time.Minute):
			s.cur.kill()
			daemon := ""
			if r.committer != nil {
				daemon = fmt.Sprintf("; %s's stderr:\n%s", r.committer.name, tailFile(r.committer.stderr))
			}
			r.t.Fatalf("%s did not exit within 2 minutes after its input closed; its stderr:\n%s%s", s.cur.name, tailFile(s.cur.stderr), daemon)
		}
		if s.cur.err != nil {
			if r.mayFail(s) {
				r.countFail(s)
			} else {
				r.t.Errorf("%s exited with %v after its input closed; stderr:\n%s", s.cur.name, s.cur.err, tailFile(s.cur.stderr))
			}
		}
	}
	r.harvest(s)
}

// journalCensus counts the journals in the store at storeURL, their windows and their
// fences (a fence has no index: only small objects are read to tell them apart).
func journalCensus(storeURL string) (journals, windows, fences int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := storeurl.Open(ctx, storeURL)
	if err != nil {
		return 0, 0, 0, err
	}
	defer st.Close()
	ids := map[journal.ID]bool{}
	err = objectstore.ListAll(ctx, st, journal.Root, func(o objectstore.ObjectInfo) error {
		id, _, ok := journal.ParseKey(o.Key)
		if !ok {
			return fmt.Errorf("%s: not a journal object's key", o.Key)
		}
		ids[id] = true
		if o.Size <= 256 {
			h, _, err := journal.ReadIndex(ctx, st, o.Key)
			if err != nil {
				return err
			}
			if h.Kind == journal.KindFence {
				fences++
				return nil
			}
		}
		windows++
		return nil
	})
	return len(ids), windows, fences, err
}

// mayFail reports whether the slot's process may have failed by itself: it appends
// through the daemon, which was killed, stopped or continued since it started.
func (r *crashRun) mayFail(s *producerSlot) bool {
	return s.api && len(r.daemonEvents) > s.mark
}

// countFail notes a failure of the slot's process through the daemon (mayFail).
func (r *crashRun) countFail(s *producerSlot) {
	r.apiFails++
	if !slices.Contains(r.daemonEvents[s.mark:], "kill") {
		r.pauseFails++
		if r.pauseFails == 1 {
			r.t.Logf("%s failed through the stopped and continued daemon: %s", s.cur.name, strings.TrimSpace(tailFile(s.cur.stderr)))
		}
	}
	if data, _ := os.ReadFile(s.cur.stderr); bytes.Contains(data, []byte("fenced")) {
		r.fencedFails++
	}
}

func tailFile(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}

func runCrash(t *testing.T, storeURL string, sc scenario) {
	seed := testseed.Get(t)
	cycles := cyclesFor(t)
	// With pauses the run goes on past its cycles until the committer was stopped past its
	// lease (and the producers committed meanwhile), and killed, this many times.
	minPauses, minComKills := 0, 0
	if sc.pause {
		// Each pause outlasts the lease by seconds, so the suite runs the short form on every
		// store; SLUICE_CRASHTEST_CYCLES asks for a longer run (more pauses and kills too).
		minPauses, minComKills = 3, 2
		if os.Getenv("SLUICE_CRASHTEST_CYCLES") == "" {
			cycles = min(cycles, 15)
		} else {
			minPauses, minComKills = max(3, cycles/8), max(2, cycles/15)
		}
	}
	// The run must have killed this many processes, or it proved little.
	minKills := 0
	if !testing.Short() && os.Getenv("SLUICE_CRASHTEST_CYCLES") == "" {
		minKills = 50
	}
	if sc.journal {
		// The point is the journal a killed daemon leaves behind: see it happen.
		minComKills = max(minComKills, 2)
		if !sc.pause && os.Getenv("SLUICE_CRASHTEST_CYCLES") == "" {
			// The suite runs a shorter form (it adds a file and an S3 run to the crash
			// package's minutes); SLUICE_CRASHTEST_CYCLES asks for a longer one. Each
			// cycle kills at least one process.
			cycles = min(cycles, journalCycles)
			minKills = min(minKills, cycles)
		}
	}
	t.Logf("seed %d, %d cycles (replay: %s=%d go test ./crashtest -run %s)", seed, cycles, testseed.Env, seed, t.Name())
	r := &crashRun{t: t, bin: sluiceBin(t), storeURL: storeURL, dir: t.TempDir(), rng: rand.New(rand.NewPCG(seed, 0xc7a5)), sc: sc, minKills: minKills}
	r.cLog = filepath.Join(r.dir, "consumed.jsonl")
	if sc.viaAPI > 0 {
		r.basin = journalBasin
		if out, err := exec.Command(r.bin, "--store", storeURL, "basin", "create", r.basin).CombinedOutput(); err != nil {
			t.Fatalf("sluice basin create: %v\n%s", err, out)
		}
	}
	if out, err := r.sluice("stream", "create", "crash").CombinedOutput(); err != nil {
		t.Fatalf("sluice stream create: %v\n%s", err, out)
	}
	if sc.committer {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r.committerAddr = ln.Addr().String()
		ln.Close()
		r.startCommitter()
	}
	producers := sc.producers
	for i := range producers {
		s := &producerSlot{id: i, sent: map[string]bool{}, api: i < sc.viaAPI}
		r.slots = append(r.slots, s)
		r.startProducer(s)
	}
	r.startConsumer()
	consumerKills := 0
	began := time.Now()
	// A pause stalled by the file store's lock proves nothing of the producers: not counted.
	for c := 0; c < cycles || r.pauses-r.lockStalls < minPauses || r.comKills < minComKills; c++ {
		if c > 100*cycles+1000 {
			t.Fatalf("%d cycles and still %d pauses, %d committer kills", c, r.pauses, r.comKills)
		}
		sleep := time.Duration(20+r.rng.IntN(300)) * time.Millisecond
		if r.paused {
			sleep = min(sleep, time.Until(r.pauseEnd))
		}
		time.Sleep(sleep)
		switch {
		case r.paused && !time.Now().Before(r.pauseEnd):
			r.resumeCommitter()
		case sc.pause && !r.paused && r.rng.IntN(4) == 0:
			r.pauseCommitter()
		}
		// Kill one process, sometimes two.
		for range 1 + r.rng.IntN(2) {
			victims := producers + 1
			if sc.committer {
				victims++
			}
			victim := r.rng.IntN(victims)
			if victim == producers+1 && r.paused && r.rng.IntN(20) != 0 {
				continue // mostly, let a pause run past the lease
			}
			r.kills++
			if victim == producers+1 {
				if r.paused {
					r.paused = false // killed while stopped
					r.pauseKills++
				}
				r.committer.kill()
				r.daemonEvents = append(r.daemonEvents, "kill")
				r.comKills++
				r.startCommitter()
				continue
			}
			if victim == producers {
				r.consumer.kill()
				consumerKills++
				r.startConsumer()
				continue
			}
			s := r.slots[victim]
			r.stopProducer(s, true)
			r.startProducer(s)
		}
		if c%10 == 9 {
			t.Logf("cycle %d: %d kills, %v", c+1, r.kills, time.Since(began).Round(time.Millisecond))
		}
		// A process that exited by itself (not killed) is a failure, but for a producer
		// through the daemon after the daemon was killed or stopped: it is restarted.
		for _, s := range r.slots {
			select {
			case <-s.cur.done:
				if !r.mayFail(s) {
					t.Fatalf("%s exited on its own: %v\n%s", s.cur.name, s.cur.err, tailFile(s.cur.stderr))
				}
				r.countFail(s)
				r.stopProducer(s, true)
				r.startProducer(s)
			default:
			}
		}
		select {
		case <-r.consumer.done:
			t.Fatalf("%s exited on its own: %v\n%s", r.consumer.name, r.consumer.err, tailFile(r.consumer.stderr))
		default:
		}
		if sc.committer {
			select {
			case <-r.committer.done:
				t.Fatalf("%s exited on its own: %v\n%s", r.committer.name, r.committer.err, tailFile(r.committer.stderr))
			default:
			}
		}
	}
	if r.paused {
		r.resumeCommitter()
	}
	// Let the producers finish cleanly: every line they read is acknowledged.
	for _, s := range r.slots {
		t0 := time.Now()
		r.stopProducer(s, false)
		if d := time.Since(t0); d > 5*time.Second {
			t.Logf("%s took %v to finish its appends after its input closed; stderr:\n%s", s.cur.name, d.Round(time.Millisecond), tailFile(s.cur.stderr))
		}
	}
	if sc.committer {
		r.committer.kill()
		// The last write of a committer left its role in the manifest: commits went through it.
		out, err := r.sluice("inspect", "crash").Output()
		var ins struct {
			Committer *struct{ URL string } `json:"committer"`
		}
		if err != nil || json.Unmarshal(out, &ins) != nil || ins.Committer == nil || ins.Committer.URL != "http://"+r.committerAddr {
			t.Errorf("inspect after the run: %v, committer %+v: want the committer's role", err, ins.Committer)
		}
		t.Logf("the committer was killed %d times", r.comKills)
		if sc.viaAPI > 0 {
			t.Logf("%d producers through the daemon's S2 API failed as it was killed or stopped under them (%d stopped and continued only; %d told their append was not committed as the journal was fenced)",
				r.apiFails, r.pauseFails, r.fencedFails)
		}
		if sc.journal {
			js, windows, fences, err := journalCensus(storeURL)
			if err != nil {
				t.Fatalf("reading the journals: %v", err)
			}
			// The daemon warns of a window write that failed, such as one refused
			// create-only on a fence (it then starts a new journal).
			refused := 0
			for i := 1; i <= r.comInst; i++ {
				data, _ := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("committer.i%d.err", i)))
				for l := range strings.Lines(string(data)) {
					if strings.Contains(l, "journal window write failed") && strings.Contains(l, "fenced") {
						refused++
					}
				}
			}
			t.Logf("journals: %d, holding %d windows and %d fences; %d window writes were refused on a fence", js, windows, fences, refused)
			// A pause the tail moved through was a direct commit on a stream whose manifest
			// named the stopped daemon's journal: that commit fenced it.
			if sc.pause && r.pauses > r.lockStalls && fences == 0 {
				t.Errorf("%d pauses past the lease and no journal was fenced", r.pauses)
			}
		}
		if sc.pause {
			t.Logf("the committer was stopped past its lease %d times (and killed while stopped %d times); %d records were committed while it was stopped; %d pauses stalled on a file store lock it held",
				r.pauses, r.pauseKills, r.pausedRecords, r.lockStalls)

		}
	}
	t.Logf("the producers stopped at %v", time.Since(began).Round(time.Millisecond))
	r.consumer.kill()
	consumerKills++
	// A last member drains the group to the tail.
	r.cinst++
	final := r.start(fmt.Sprintf("c.i%d", r.cinst), false, "consume", "crash", "--group", "g", "--batch", "100",
		"--stop-at-tail", "--exec", "cat >> "+shellQuote(r.cLog))
	select {
	case <-final.done:
	case <-time.After(2 * time.Minute):
		final.kill()
		t.Fatalf("the final consumer did not reach the tail")
	}
	if final.err != nil {
		t.Fatalf("final consumer: %v\n%s", final.err, tailFile(final.stderr))
	}
	t.Logf("the final consumer reached the tail at %v", time.Since(began).Round(time.Millisecond))
	recs := r.readAll()
	consumed, err := os.ReadFile(r.cLog)
	if err != nil {
		t.Fatal(err)
	}
	problems, summary := r.check(recs, consumed, consumerKills)
	for _, p := range problems {
		t.Error(p)
	}
	t.Log(summary)
	if len(problems) > 0 {
		t.Logf("logs in %s (seed %d)", r.dir, seed)
	}
}

func (r *crashRun) readAll() []readLine {
	r.t.Helper()
	cmd := r.sluice("read", "crash", "--format", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("sluice read: %v\n%s", err, stderr.String())
	}
	var recs []readLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l readLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			r.t.Fatalf("sluice read printed %q: %v", sc.Text(), err)
		}
		recs = append(recs, l)
	}
	return recs
}

// check returns every broken invariant, given the final read, the group's output and the
// acks harvested into the slots.
func (r *crashRun) check(recs []readLine, consumed []byte, consumerKills int) (problems []string, summary string) {
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	sent := map[string]bool{}
	ackedN := 0
	for _, s := range r.slots {
		for l := range s.sent {
			sent[l] = true
		}
		ackedN += len(s.acked)
	}
	where := map[string]uint64{}
	var lastTS uint64
	for i, rec := range recs {
		if rec.SeqNum != uint64(i) {
			bad("record %d has seq_num %d: not contiguous", i, rec.SeqNum)
			return problems, ""
		}
		if rec.Timestamp < lastTS {
			bad("timestamp goes back at %d: %d < %d", i, rec.Timestamp, lastTS)
		}
		lastTS = rec.Timestamp
		if j, dup := where[rec.Body]; dup {
			bad("record %q twice, at %d and %d", rec.Body, j, i)
		}
		where[rec.Body] = rec.SeqNum
		if !sent[rec.Body] {
			bad("record %q at %d was never sent", rec.Body, i)
		}
	}
	for _, s := range r.slots {
		for _, a := range s.acked {
			got, ok := where[a.body]
			switch {
			case !ok:
				bad("acked record %q (seq_num %d) is missing", a.body, a.seq)
			case got != a.seq:
				bad("acked record %q is at %d, its ack says %d", a.body, got, a.seq)
			case a.ts != 0 && recs[got].Timestamp != a.ts:
				bad("acked record %q has timestamp %d, its ack says %d", a.body, recs[got].Timestamp, a.ts)
			}
		}
	}
	// The group's output: every line matches the stream; a member never skips ahead.
	data := consumed
	seen := make([]bool, len(recs))
	broken, restarts := 0, 0
	var prev int64 = -1
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" {
			continue
		}
		var c readLine
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			broken++ // a command killed mid-line
			prev = -2
			continue
		}
		if c.SeqNum >= uint64(len(recs)) {
			bad("consumer delivered seq_num %d beyond the tail %d", c.SeqNum, len(recs))
			continue
		}
		if recs[c.SeqNum].Body != c.Body || recs[c.SeqNum].Timestamp != c.Timestamp {
			bad("consumer delivered (%d, %q, %d), the stream holds (%q, %d)", c.SeqNum, c.Body, c.Timestamp, recs[c.SeqNum].Body, recs[c.SeqNum].Timestamp)
		}
		if prev >= 0 && int64(c.SeqNum) > prev+1 {
			bad("consumer skipped from %d to %d", prev, c.SeqNum)
		}
		if prev >= 0 && int64(c.SeqNum) != prev+1 {
			restarts++
		}
		seen[c.SeqNum] = true
		prev = int64(c.SeqNum)
	}
	if broken > consumerKills {
		bad("%d broken lines in the consumer's output, more than the %d consumer kills", broken, consumerKills)
	}
	missing := 0
	for i, ok := range seen {
		if !ok {
			if missing < 5 {
				bad("record %d (%q) never reached the consumer group", i, recs[i].Body)
			}
			missing++
		}
	}
	if missing > 0 {
		bad("%d records never reached the consumer group", missing)
	}
	if ackedN == 0 || r.kills < r.minKills {
		bad("the run proved little: %d acked records, %d kills", ackedN, r.kills)
	}
	summary = fmt.Sprintf("%d records in the stream, %d acknowledged to producers, %d kills (%d of the consumer), %d consumer rewinds, %d broken consumer lines",
		len(recs), ackedN, r.kills, consumerKills, restarts, broken)
	return problems, summary
}

// TestCheckerCatches feeds the crash checker damaged outcomes: each must be reported.
func TestCheckerCatches(t *testing.T) {
	line := func(seq uint64, body string) string {
		return fmt.Sprintf(`{"seq_num":%d,"timestamp":%d,"headers":[],"body":%q}`+"\n", seq, 100+seq, body)
	}
	good := func() (*crashRun, []readLine, string) {
		r := &crashRun{t: t, kills: 60}
		s := &producerSlot{sent: map[string]bool{"a": true, "b": true, "c": true}}
		s.acked = []ackedRecord{{body: "a", seq: 0, ts: 100}, {body: "b", seq: 1}, {body: "c", seq: 2}}
		r.slots = []*producerSlot{s}
		recs := []readLine{{0, 100, "a"}, {1, 101, "b"}, {2, 102, "c"}}
		return r, recs, line(0, "a") + line(1, "b") + line(0, "a") + line(1, "b") + line(2, "c")
	}
	r, recs, consumed := good()
	if p, _ := r.check(recs, []byte(consumed), 1); len(p) > 0 {
		t.Fatalf("a clean outcome was reported: %v", p)
	}
	for _, c := range []struct {
		name, want string
		damage     func(r *crashRun, recs *[]readLine, consumed *string)
	}{
		{"acked record missing", "is missing", func(r *crashRun, recs *[]readLine, consumed *string) {
			r.slots[0].sent["d"] = true
			r.slots[0].acked = append(r.slots[0].acked, ackedRecord{body: "d", seq: 3})
		}},
		{"acked record misplaced", "its ack says", func(r *crashRun, recs *[]readLine, consumed *string) {
			r.slots[0].acked[1].seq = 2
		}},
		{"duplicate", "twice", func(r *crashRun, recs *[]readLine, consumed *string) {
			*recs = append(*recs, readLine{3, 103, "b"})
			*consumed += line(3, "b")
		}},
		{"gap", "not contiguous", func(r *crashRun, recs *[]readLine, consumed *string) {
			(*recs)[2].SeqNum = 5
		}},
		{"never sent", "never sent", func(r *crashRun, recs *[]readLine, consumed *string) {
			delete(r.slots[0].sent, "c")
		}},
		{"timestamp back", "timestamp goes back", func(r *crashRun, recs *[]readLine, consumed *string) {
			(*recs)[2].Timestamp = 1
		}},
		{"consumer skipped", "skipped", func(r *crashRun, recs *[]readLine, consumed *string) {
			*consumed = line(0, "a") + line(2, "c")
		}},
		{"consumer missed", "never reached the consumer group", func(r *crashRun, recs *[]readLine, consumed *string) {
			*consumed = line(0, "a") + line(1, "b")
		}},
		{"consumer forged", "the stream holds", func(r *crashRun, recs *[]readLine, consumed *string) {
			*consumed = line(0, "a") + line(1, "x") + line(2, "c")
		}},
	} {
		r, recs, consumed := good()
		c.damage(r, &recs, &consumed)
		p, _ := r.check(recs, []byte(consumed), 1)
		if !strings.Contains(strings.Join(p, "\n"), c.want) {
			t.Errorf("%s: not reported (want %q), got %v", c.name, c.want, p)
		}
	}
}
