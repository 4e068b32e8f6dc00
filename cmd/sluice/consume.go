package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storemetrics"
)

type consumeFlags struct {
	basin            string
	group            string
	exec             string
	batch            int
	format           string
	maxAttempts      int
	backoff          time.Duration
	maxBackoff       time.Duration
	includeCommands  bool
	stopAtTail       bool
	ackInterval      time.Duration
	committer        string
	committerToken   string
	committerTimeout time.Duration
	stopTimeout      time.Duration
	startAt          string
	metricsListen    string
}

func newConsumeCmd(g *globals) *cobra.Command {
	f := &consumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume STREAM --group G --exec CMD",
		Short: "Run a consumer-group member that pipes records to a command",
		Long: `Join consumer group G of STREAM as its one active member and, for each record (or
each batch of up to --batch records), run CMD with "sh -c", writing the records to its
stdin one per line in --format (json, base64 or raw, as "sluice read" prints them).

A record is acknowledged only when CMD exits 0; acknowledgements advance the group's
checkpoint in the manifest (written at most --ack-interval later, and on exit), and a
restarted member resumes after the checkpoint. Delivery is at-least-once: records whose
acknowledgement was not written yet when a member died are piped again.

When CMD fails (non-zero exit, or it cannot be started), the same records are retried up
to --max-attempts times in all, waiting --backoff, doubling up to --max-backoff, between
attempts. If the last attempt fails, consume stops: it writes the acknowledgements of the
records before, and exits 1 naming the seq_num and CMD's exit status (the failed records
are the first a restarted member gets). --max-attempts 0 retries forever.

A group that does not exist yet is created at the head (its first readable record) or,
with --start-at tail, at the tail (only records appended from then on); a group that
exists resumes from its checkpoint whatever --start-at says (sluice groups reset moves it).

Joining the group fences the previous member: a member that finds itself fenced exits 1
(as it does when sluice groups reset or delete changes its group).
consume follows the tail until SIGINT/SIGTERM (or, with --stop-at-tail, until it reaches
the tail). On SIGINT/SIGTERM it sends SIGTERM to a running CMD, waits up to --stop-timeout
for it (its records are acknowledged if it exits 0), writes the acknowledgements and exits 0.

CMD's stdout and stderr are sluice's. Its environment also holds SLUICE_CONSUME_STREAM,
SLUICE_CONSUME_GROUP, SLUICE_CONSUME_SEQ_NUM (first record), SLUICE_CONSUME_COUNT (records)
and SLUICE_CONSUME_ATTEMPT (from 1).

With --endpoint (or SLUICE_ENDPOINT) it runs through a daemon, with the same flags, output
and exit codes: the daemon joins the group and writes the acknowledgements it is sent (within
--ack-interval and on exit); the token needs read. --committer, --committer-timeout and
--metrics-listen need a store.

With --metrics-listen ADDR it serves Prometheus metrics on http://ADDR/metrics while it
runs: sluice_consumer_group_lag_records and sluice_consumer_group_lag_seconds (labels
stream, group: the records from the acknowledged position to the tail as of the last
read or acknowledgement, and the age at the scrape of the oldest unacknowledged record),
the other
sluice_consumer_* and sluice_objectstore_* metrics, and Go runtime metrics.`,
		Example: `  sluice consume orders --group billing --exec 'jq -r .body >> orders.txt'
  sluice consume events --group loader --batch 500 --format raw --exec 'psql -c "\copy t from stdin"'`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd, g, f, args[0])
		},
	}
	fl := cmd.Flags()
	addBasinFlag(cmd, &f.basin)
	fl.StringVar(&f.group, "group", "", "consumer group name (required; 1 to 128 bytes)")
	fl.StringVar(&f.exec, "exec", "", "command run with sh -c for each record or batch (required)")
	fl.IntVar(&f.batch, "batch", 1, "most records piped to one run of the command (1 to 1000)")
	fl.Var(newEnum(&f.format, "json", "json", "base64", "raw"), "format", "format of the records on the command's stdin: json, base64 or raw")
	fl.IntVar(&f.maxAttempts, "max-attempts", 5, "runs of the command for the same records before consume stops (0 = retry forever)")
	fl.Var(newDurationValue(&f.backoff, time.Second), "backoff", "wait before the first retry (doubles each retry)")
	fl.Var(newDurationValue(&f.maxBackoff, 30*time.Second), "max-backoff", "longest wait between retries")
	fl.BoolVar(&f.includeCommands, "include-commands", false, "pipe command records (fence, trim) too (with --format json or base64)")
	fl.BoolVar(&f.stopAtTail, "stop-at-tail", false, "exit 0 once every record up to the tail is processed instead of following")
	fl.Var(newDurationValue(&f.ackInterval, time.Second), "ack-interval", "how long acknowledgements may wait before they are written")
	fl.StringVar(&f.committer, "committer", "", "URL of a committer (a sluice serve daemon) to write the group's checkpoints with its commits while the stream names none; with none answering they are written directly")
	fl.StringVar(&f.committerToken, "committer-token", "", "bearer token of the committer's API (prefer SLUICE_COMMITTER_TOKEN)")
	fl.Var(newDurationValue(&f.committerTimeout, commitclient.DefaultRequestTimeout), "committer-timeout", "how long a checkpoint write waits for a committer's answer (--committer's, or the one the stream names) before the member writes directly, for 10 s")
	fl.Var(newDurationValue(&f.stopTimeout, 30*time.Second), "stop-timeout", "on SIGINT/SIGTERM, how long to wait for a running command")
	fl.Var(newEnum(&f.startAt, "head", "head", "tail"), "start-at", "where a group that does not exist yet starts: head (its first readable record) or tail (records appended from now on)")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics on http://ADDR/metrics (host:port) while consuming")
	return throughDaemon(cmd)
}

func (f *consumeFlags) validate() error {
	var errs []error
	if f.group == "" {
		errs = append(errs, errors.New("--group is required"))
	} else if len(f.group) > consumer.MaxGroupNameLen {
		errs = append(errs, fmt.Errorf("invalid value for --group: %d bytes, at most %d", len(f.group), consumer.MaxGroupNameLen))
	}
	if f.exec == "" {
		errs = append(errs, errors.New("--exec is required"))
	}
	if f.batch < 1 || f.batch > 1000 {
		errs = append(errs, fmt.Errorf("invalid value %d for --batch: want 1 to 1000", f.batch))
	}
	if f.maxAttempts < 0 {
		errs = append(errs, fmt.Errorf("invalid value %d for --max-attempts: want >= 0", f.maxAttempts))
	}
	if f.backoff < 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --backoff: must not be negative", f.backoff))
	}
	if f.maxBackoff < f.backoff {
		errs = append(errs, fmt.Errorf("invalid value %v for --max-backoff: must be at least --backoff (%v)", f.maxBackoff, f.backoff))
	}
	if f.ackInterval <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --ack-interval: must be positive", f.ackInterval))
	}
	if f.committerTimeout <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --committer-timeout: must be positive", f.committerTimeout))
	}
	if f.stopTimeout <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --stop-timeout: must be positive", f.stopTimeout))
	}
	if f.includeCommands && f.format == "raw" {
		errs = append(errs, errors.New("--include-commands needs --format json or base64: raw has no headers to mark a command record by"))
	}
	return errors.Join(errs...)
}

func runConsume(cmd *cobra.Command, g *globals, f *consumeFlags, name string) error {
	ctx := cmd.Context()
	if err := f.validate(); err != nil {
		return err
	}
	if g.endpoint != "" {
		return runConsumeDaemon(cmd, g, f, name)
	}
	e, st, err := openStream(ctx, g, &f.basin, name)
	if err != nil {
		return err
	}
	defer e.close()
	var reg *prometheus.Registry
	if f.metricsListen != "" {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		sm, err := storemetrics.New(reg)
		if err != nil {
			return err
		}
		e.store = objectstore.Instrument(e.store, sm)
		stop, err := serveMetrics(e, f.metricsListen, reg)
		if err != nil {
			return err
		}
		defer stop()
	}
	cfg := consumer.DefaultGroupConfig()
	cfg.ObjectStore = e.store
	cfg.Stream = st
	cfg.Group = f.group
	cfg.AckInterval = f.ackInterval
	cfg.Committer = commitclient.Config{URL: f.committer, Token: f.committerToken, RequestTimeout: f.committerTimeout}
	// Followed through the committer's watch while one answers (the same committer and
	// token as the checkpoints), else by polling the store.
	hub, err := e.followHub(cfg.Committer)
	if err != nil {
		return err
	}
	defer hub.Close()
	cfg.Watch = hub
	cfg.MaxBatchRecords = f.batch
	cfg.Logger = e.log
	cfg.StreamName = name
	if f.startAt == "tail" {
		cfg.NewGroupStart = consumer.StartAtTail
	}
	if reg != nil {
		cfg.Registerer = reg
	}
	c, err := consumer.Open(ctx, cfg, consumer.GroupOptions{SkipCommands: !f.includeCommands})
	ce := e.consumeEnv()
	if err != nil {
		return ce.consumeErr(name, f.group, err)
	}
	acked, _ := c.Checkpoint()
	e.log.Info("consumer started", "stream", name, "group", f.group, "epoch", c.Epoch(), "from", acked)

	var tail uint64
	if f.stopAtTail {
		r, err := e.newReader(st)
		if err == nil {
			var pos manifest.Position
			pos, err = r.CheckTail(ctx)
			tail = pos.SeqNum
		}
		if err != nil {
			_ = c.Close(context.Background())
			return e.readErr(name, err)
		}
	}
	return consumeRun(ctx, ce, c, f, name, tail)
}

// consumeRun runs the member c from its checkpoint until it stops, then closes it, writing
// its acknowledgements.
func consumeRun(ctx context.Context, e consumeEnv, c groupMember, f *consumeFlags, name string, tail uint64) error {
	runErr := consumeLoop(ctx, e, c, f, name, tail)
	// Write the acknowledgements even after SIGINT/SIGTERM cancelled ctx.
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	closeErr := c.Close(cctx)
	acked, written := c.Checkpoint()
	e.log.Info("consumer stopped", "stream", name, "group", f.group, "acked", acked, "checkpoint", written)
	if runErr != nil {
		return runErr
	}
	if closeErr != nil {
		return e.consumeErr(name, f.group, fmt.Errorf("writing the checkpoint: %w", closeErr))
	}
	return nil
}

// groupMember is what consume needs of its group's member: a *consumer.Consumer on a store,
// a *daemonMember through a daemon.
type groupMember interface {
	Next(ctx context.Context) (consumer.ReadBatch, error)
	Poll(ctx context.Context) (consumer.ReadBatch, error)
	AckThrough(seq uint64) error
	Check(ctx context.Context) error
	Checkpoint() (acked, written uint64)
	Epoch() uint64
	Close(ctx context.Context) error
}

// consumeEnv is what consume needs of where it runs, a store or a daemon: its log, and the
// words of its messages.
type consumeEnv struct {
	log     *slog.Logger
	where   func(name string) string
	readErr func(name string, err error) error
}

func (e *libEnv) consumeEnv() consumeEnv {
	return consumeEnv{log: e.log, where: e.where, readErr: e.readErr}
}

// serveMetrics serves reg on http://addr/metrics until stop is called.
func serveMetrics(e *libEnv, addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	e.log.Info("serving metrics", "listen", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// consumeErr explains a consumer failure.
func (e consumeEnv) consumeErr(name, group string, err error) error {
	var fe *consumer.FencedError
	if errors.As(err, &fe) && fe.Current == 0 {
		return fmt.Errorf("%s: group %q was deleted (sluice groups delete); stopping", e.where(name), group)
	}
	if errors.As(err, &fe) {
		return fmt.Errorf("%s: group %q: another member took over, or the group was reset (its epoch %d is newer than this member's %d); stopping", e.where(name), group, fe.Current, fe.Epoch)
	}
	return e.readErr(name, err)
}

func consumeLoop(ctx context.Context, e consumeEnv, c groupMember, f *consumeFlags, name string, tail uint64) error {
	var buf bytes.Buffer
	out := newJSONOut(&buf) // flushed into buf for each chunk, so reusable
	next, _ := c.Checkpoint()
	for {
		if f.stopAtTail && next >= tail {
			return nil
		}
		b, err := nextBatch(ctx, c, f.stopAtTail)
		switch {
		case err == nil:
		case errors.Is(err, errAtTail):
			return nil
		case ctx.Err() != nil:
			return nil
		default:
			return e.consumeErr(name, f.group, err)
		}
		next, tail = b.NextSeq, b.Tail.SeqNum
		recs := b.Records
		for len(recs) > 0 {
			n := min(len(recs), f.batch)
			chunk := recs[:n]
			recs = recs[n:]
			buf.Reset()
			if err := writeRecords(out, f.format, chunk); err != nil {
				return err
			}
			if err := out.flush(); err != nil {
				return err
			}
			ok, err := runWithRetries(ctx, e, f, name, c, chunk, buf.Bytes())
			if err != nil {
				return err
			}
			if !ok { // stopped by a signal before the command succeeded
				return nil
			}
			if err := c.AckThrough(chunk[len(chunk)-1].SeqNum); err != nil {
				return e.consumeErr(name, f.group, err)
			}
		}
	}
}

// errAtTail ends a --stop-at-tail run.
var errAtTail = errors.New("at the tail")

// nextBatch returns the next batch; with stopAtTail it returns errAtTail instead of waiting at
// the tail: Poll answers at once when no record is left, having passed the records the read
// skips (commands, trimmed ones), and it still waits for a slow fetch.
func nextBatch(ctx context.Context, c groupMember, stopAtTail bool) (consumer.ReadBatch, error) {
	if !stopAtTail {
		return c.Next(ctx)
	}
	for {
		b, err := c.Poll(ctx)
		if err != nil || len(b.Records) > 0 {
			return b, err
		}
		if b.NextSeq >= b.Tail.SeqNum {
			return b, errAtTail
		}
		// The tail moved past what the read had loaded: poll again shortly.
		select {
		case <-ctx.Done():
			return b, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// runWithRetries runs the command on one chunk until it succeeds, the attempts run out
// (an error), the member finds itself fenced before a retry (an error), or ctx ends (false,
// nil; no command is started once it has).
func runWithRetries(ctx context.Context, e consumeEnv, f *consumeFlags, name string, c groupMember, chunk []consumer.SequencedRecord, input []byte) (bool, error) {
	first, last := chunk[0].SeqNum, chunk[len(chunk)-1].SeqNum
	wait := f.backoff
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return false, nil
		}
		if attempt > 1 {
			// A member retrying a record reads nothing and acknowledges nothing: ask the
			// manifest whether another member has taken over before running it again.
			if err := c.Check(ctx); err != nil && ctx.Err() == nil {
				var fe *consumer.FencedError
				if errors.As(err, &fe) || errors.Is(err, manifest.ErrGenerationChanged) {
					return false, e.consumeErr(name, f.group, err)
				}
				e.log.Warn("could not check the group before a retry", "error", err)
			}
		}
		err := runOnce(ctx, f, name, chunk, input, attempt)
		if err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			e.log.Info("stopping: command interrupted, its records stay unacknowledged", "seq_num", first, "error", err)
			return false, nil
		}
		if f.maxAttempts > 0 && attempt >= f.maxAttempts {
			return false, fmt.Errorf("%s: group %q: --exec command failed on records %d..%d after %d attempts (--max-attempts): %w; the records before are acknowledged",
				e.where(name), f.group, first, last, attempt, err)
		}
		e.log.Warn("command failed; retrying", "seq_num", first, "records", len(chunk), "attempt", attempt, "error", err, "wait", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return false, nil
		}
		wait = min(2*wait, f.maxBackoff)
	}
}

// runOnce runs the command once with the records on its stdin.
func runOnce(ctx context.Context, f *consumeFlags, name string, chunk []consumer.SequencedRecord, input []byte, attempt int) error {
	// The command is not killed at once when ctx ends: it gets SIGTERM and --stop-timeout.
	cmd := exec.Command("sh", "-c", f.exec)
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"SLUICE_CONSUME_STREAM="+name,
		"SLUICE_CONSUME_GROUP="+f.group,
		"SLUICE_CONSUME_SEQ_NUM="+strconv.FormatUint(chunk[0].SeqNum, 10),
		"SLUICE_CONSUME_COUNT="+strconv.Itoa(len(chunk)),
		"SLUICE_CONSUME_ATTEMPT="+strconv.Itoa(attempt),
	)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting sh -c %q: %w", f.exec, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitErr(err)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err == nil {
			return nil // it finished its work: the records count as processed
		}
		return exitErr(err)
	case <-time.After(f.stopTimeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("killed after --stop-timeout %v", f.stopTimeout)
	}
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("command %s", ee.ProcessState.String())
	}
	return err
}
