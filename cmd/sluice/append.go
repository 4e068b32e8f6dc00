package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer/commitclient"
)

// maxLineBytes bounds one stdin line: a record is at most 1 MiB metered, and its base64 or
// JSON form somewhat more.
const maxLineBytes = 4 << 20

type appendFlags struct {
	basin            string
	format           string
	cond             conditionFlags
	create           bool
	progress         bool
	progressInterval time.Duration
	linger           time.Duration
	deliveryTimeout  time.Duration
	committer        string
	committerToken   string
	committerTimeout time.Duration
}

func newAppendCmd(g *globals) *cobra.Command {
	f := &appendFlags{}
	cmd := &cobra.Command{
		Use:   "append STREAM",
		Short: "Append stdin's lines to a stream, one record per line",
		Long: `Append each line of stdin to STREAM as one record, until stdin closes.

Formats (--format):
  raw      the line's bytes (without the '\n') are the record's body (the default)
  json     {"headers":[["name","value"]],"body":"...","timestamp":N}, strings in UTF-8;
           headers and timestamp may be left out; "seq_num" is ignored, so the output
           of "sluice read --skip-commands" can be appended (without --skip-commands,
           its fence and trim records are appended as commands and act on STREAM)
  base64   the line is the base64 of the body, or a JSON record as above whose header
           names, values and body are base64 (the output of "sluice read --format base64")

Lines are batched into appends as S2 clients batch records: an append holds up to
1000 records and 1 MiB (metered), and waits at most --linger for more lines. Each append is
acknowledged once it is durable in the store, and its ack is printed to stdout as one
JSON line, in order:
  {"start":{"seq_num":S,"timestamp":T},"end":{"seq_num":E,"timestamp":T2},"tail":{...}}
(end is exclusive). With --fencing-token every append carries that token; with
--match-seq-num the first append must start at that seq_num and each later one where the
previous one ended.

When stdin closes, the last appends are flushed and acknowledged and sluice exits 0.
On a bad line, a rejected append or a store failure, it stops reading, prints the acks of
what was appended, names the problem on stderr and exits 1. A store that refuses the
appends (a deleted bucket, revoked credentials) or does not answer is a failure once an
append has waited --delivery-timeout for it (nothing of that append is in the stream);
until then sluice retries, and logs each failed attempt. On SIGINT/SIGTERM it stops
reading, flushes what it read, and exits 1. Progress goes to stderr when stderr is a
terminal, or with --progress.

Through a daemon (--endpoint), each append is one S2 append call, sent one at a time in
order; --delivery-timeout bounds each call, a failed one is not retried and the appends
behind it are not sent. --committer needs a store.`,
		Example: `  seq 1 100000 | sluice append numbers
  echo '{"headers":[["type","greeting"]],"body":"hello"}' | sluice append events --format json
  sluice read src --format base64 --skip-commands | sluice append copy --format base64`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAppend(cmd, g, f, args[0], cmd.InOrStdin())
		},
	}
	fl := cmd.Flags()
	addBasinFlag(cmd, &f.basin)
	fl.Var(newEnum(&f.format, "raw", "raw", "json", "base64"), "format", "input format: raw, json or base64")
	f.cond.register(cmd)
	fl.BoolVar(&f.create, "create", false, "create the stream (default configuration) if it does not exist")
	fl.BoolVar(&f.progress, "progress", false, "report progress on stderr (default: when stderr is a terminal)")
	fl.Var(newDurationValue(&f.progressInterval, 2*time.Second), "progress-interval", "how often --progress reports")
	fl.Var(newDurationValue(&f.deliveryTimeout, defaultCLIDeliveryTimeout), "delivery-timeout", "how long an append may wait to be committed, once its batch is flushed, before sluice stops with an error; it bounds opening the stream too (0: retry as long as the store is out)")
	fl.StringVar(&f.committer, "committer", "", "URL of a committer (a sluice serve daemon) to send commits to while the stream names none; batches are still uploaded from here, and with no committer answering sluice commits directly")
	fl.StringVar(&f.committerToken, "committer-token", "", "bearer token of the committer's API (its --auth-token; prefer SLUICE_COMMITTER_TOKEN)")
	fl.Var(newDurationValue(&f.committerTimeout, commitclient.DefaultRequestTimeout), "committer-timeout", "how long a commit waits for a committer's answer (--committer's, or the one the stream names) before sluice commits directly, for 10 s (with --store)")
	fl.Var(newDurationValue(&f.linger, 5*time.Millisecond), "linger", "how long an append waits for more lines (0 = no waiting: each line is an append of its own)")
	return cmd
}

// lineItem is one parsed stdin line, or the error that ended the input.
type lineItem struct {
	rec  batchfmt.Record
	line int
	err  error
}

func runAppend(cmd *cobra.Command, g *globals, f *appendFlags, name string, stdin io.Reader) error {
	ctx := cmd.Context()
	tok, seq, err := f.cond.get(cmd)
	if err != nil {
		return err
	}
	if f.linger < 0 {
		return fmt.Errorf("invalid value %v for --linger: must not be negative", f.linger)
	}
	if f.progressInterval <= 0 {
		return fmt.Errorf("invalid value %v for --progress-interval: must be positive", f.progressInterval)
	}
	if f.committerTimeout <= 0 {
		return fmt.Errorf("invalid value %v for --committer-timeout: must be positive", f.committerTimeout)
	}
	bcfg := batchfmt.DefaultBatchingConfig()
	bcfg.Linger = f.linger
	var bopts []batchfmt.BatcherOption
	if tok != nil {
		bopts = append(bopts, batchfmt.WithFencingToken(*tok))
	}
	if seq != nil {
		bopts = append(bopts, batchfmt.WithMatchSeqNum(*seq))
	}
	batcher, err := batchfmt.NewBatcher(bcfg, bopts...)
	if err != nil {
		return err
	}
	showProgress := isTerminal(os.Stderr)
	if cmd.Flags().Changed("progress") {
		showProgress = f.progress
	}

	if f.create {
		if err := validateNewStreamName(name); err != nil {
			return err
		}
		g.createsStore = true
	}
	b, err := openBackend(ctx, g, &f.basin)
	if err != nil {
		return err
	}
	defer b.close()
	p, err := b.openAppender(ctx, name, appendOptions{create: f.create, deliveryTimeout: f.deliveryTimeout, committer: f.committer, committerToken: f.committerToken, committerTimeout: f.committerTimeout})
	if err != nil {
		return err
	}

	var stats appendStats
	stats.start = time.Now()

	// The printer resolves tickets in append order and prints their acks. It records the
	// first failure and keeps printing later acks: those appends are in the stream.
	tickets := make(chan appendTicket, 1024)
	failed := make(chan struct{})
	var failErr error
	var failOnce sync.Once
	fail := func(err error) {
		failOnce.Do(func() { failErr = err; close(failed) })
	}
	out := newJSONOut(cmd.OutOrStdout())
	printerDone := make(chan struct{})
	go func() {
		defer close(printerDone)
		for t := range tickets {
			ack, err := t.t.wait()
			if err != nil {
				fail(err)
				continue
			}
			stats.acked.Add(int64(t.records))
			if err := out.write(ack); err != nil {
				fail(err)
			}
		}
	}()

	// Progress reports, owned by this function, stopped before it returns.
	progQuit := make(chan struct{})
	progDone := make(chan struct{})
	go func() {
		defer close(progDone)
		if !showProgress {
			return
		}
		tk := time.NewTicker(f.progressInterval)
		defer tk.Stop()
		for {
			select {
			case <-progQuit:
				return
			case <-tk.C:
				stats.report(os.Stderr, false)
			}
		}
	}()

	// The reader parses stdin. A read of stdin cannot be interrupted, so on an early stop
	// this goroutine may stay blocked in Read until the process exits; it touches nothing
	// but its channel.
	lines := make(chan lineItem, 4096)
	readerQuit := make(chan struct{})
	go readLines(stdin, f.format, lines, readerQuit)

	submit := func(in batchfmt.AppendInput) error {
		t, err := p.submit(in)
		if err != nil {
			return err
		}
		// The printer drains tickets until the channel is closed, even after a failure.
		tickets <- appendTicket{t: t, records: len(in.Records)}
		return nil
	}

	var stopErr error // why reading stopped early
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	arm := func() {
		if dl, ok := batcher.Deadline(); ok && !armed {
			timer.Reset(time.Until(dl))
			armed = true
		}
	}
loop:
	for {
		select {
		case it, ok := <-lines:
			if !ok {
				break loop
			}
			if it.err != nil {
				stopErr = it.err
				break loop
			}
			stats.read.Add(1)
			ins, err := batcher.Add(it.rec)
			if err != nil {
				stopErr = fmt.Errorf("stdin line %d: %w", it.line, err)
				break loop
			}
			for _, in := range ins {
				if err := submit(in); err != nil {
					stopErr = err
					break loop
				}
			}
			arm()
		case <-timer.C:
			armed = false
			if in, ok := batcher.Poll(); ok {
				if err := submit(in); err != nil {
					stopErr = err
					break loop
				}
			}
			arm()
		case <-failed:
			break loop
		case <-ctx.Done():
			stopErr = fmt.Errorf("interrupted (%v); stopped reading stdin", context.Cause(ctx))
			break loop
		}
	}
	close(readerQuit)
	timer.Stop()
	select {
	case <-failed:
	default:
		if in, ok := batcher.Flush(); ok {
			if err := submit(in); err != nil && stopErr == nil {
				stopErr = err
			}
		}
	}
	close(tickets)
	<-printerDone
	cerr := p.close()
	close(progQuit)
	<-progDone
	if showProgress {
		stats.report(os.Stderr, true)
	}
	switch {
	case failErr != nil:
		return failErr
	case stopErr != nil:
		return fmt.Errorf("%w (%d records acknowledged; their acks are on stdout)", stopErr, stats.acked.Load())
	case cerr != nil:
		return cerr
	}
	return nil
}

type appendTicket struct {
	t       ackWaiter
	records int
}

// appendStats are append's progress counters.
type appendStats struct {
	start time.Time
	read  atomic.Int64
	acked atomic.Int64
}

func (s *appendStats) report(w io.Writer, final bool) {
	el := time.Since(s.start)
	rate := float64(s.acked.Load()) / el.Seconds()
	what := "progress"
	if final {
		what = "done"
	}
	fmt.Fprintf(w, "sluice append %s: %d lines read, %d records acknowledged in %v (%.0f records/s)\n",
		what, s.read.Load(), s.acked.Load(), el.Round(time.Millisecond), rate)
}

// readLines parses stdin into lines, closing out at the end of input or after the first error.
func readLines(r io.Reader, format string, out chan<- lineItem, quit <-chan struct{}) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	sc.Split(splitLines)
	n := 0
	send := func(it lineItem) bool {
		select {
		case out <- it:
			return true
		case <-quit:
			return false
		}
	}
	for sc.Scan() {
		n++
		rec, err := parseLine(format, sc.Bytes())
		if err != nil {
			send(lineItem{err: fmt.Errorf("stdin line %d (--format %s): %w", n, format, err)})
			return
		}
		if !send(lineItem{rec: rec, line: n}) {
			return
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("longer than %d bytes", maxLineBytes)
		}
		send(lineItem{err: fmt.Errorf("stdin line %d: %w", n+1, err)})
	}
}
