package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/stream"
)

type readFlags struct {
	basin        string
	seqNum       uint64
	timestamp    uint64
	tailOffset   uint64
	count        uint64
	bytes        uint64
	until        uint64
	clamp        bool
	follow       bool
	committerTok string
	format       string
	skipCommands bool
}

func newReadCmd(g *globals) *cobra.Command {
	f := &readFlags{}
	cmd := &cobra.Command{
		Use:   "read STREAM",
		Short: "Read records of a stream as JSON lines",
		Long: `Read STREAM in seq_num order and print one line per record.

Start (at most one; default --seq-num 0):
  --seq-num N       at seq_num N (past the tail: an error naming the tail, unless --clamp)
  --timestamp MS    at the first record whose timestamp is >= MS (none: at the tail, so
                    without --follow nothing is read; the daemon's API answers 416 there)
  --tail-offset N   N records before the tail (--tail-offset 0: only new records)
A start below the trim point (or below what retention kept) starts at the first readable
record.

Stop (any of them; without --follow the read also stops at the tail):
  --count N         after N records (0: no limit, as count=0 in S2's API)
  --bytes N         before a record that would take the metered bytes read past N (0: no
                    limit)
  --until MS        at the first record whose timestamp is >= MS (exclusive)
  --follow          at the tail, wait for new records (until SIGINT/SIGTERM, exit 0): told
                    at once by the stream's committer (a daemon) while one answers (with
                    --committer-token if it needs one), else within about 1 s

Formats (--format):
  json     {"seq_num":N,"timestamp":T,"headers":[["name","value"]],"body":"..."} with
           UTF-8 strings (bytes that are not UTF-8 become U+FFFD; use base64 for binary)
  base64   the same JSON with header names, values and body in base64 (lossless; append
           --format base64 takes it back)
  raw      the body only, followed by '\n'; command records are left out (raw has no
           headers to mark them by)

Command records (fence, trim) are part of the stream and are printed in json and base64,
as a header with an empty name (["","fence"]); --skip-commands leaves them out.`,
		Example: `  sluice read orders --count 10
  sluice read orders --tail-offset 0 --follow
  sluice read orders --timestamp 1709481600000 --until 1709485200000 --format raw`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRead(cmd, g, f, args[0])
		},
	}
	fl := cmd.Flags()
	addBasinFlag(cmd, &f.basin)
	fl.Uint64Var(&f.seqNum, "seq-num", 0, "start at this seq_num")
	fl.Uint64Var(&f.timestamp, "timestamp", 0, "start at the first record with a timestamp >= this (ms since the Unix epoch)")
	fl.Uint64Var(&f.tailOffset, "tail-offset", 0, "start this many records before the tail")
	fl.Uint64Var(&f.count, "count", 0, "stop after this many records (0: no limit)")
	fl.Uint64Var(&f.bytes, "bytes", 0, "stop before exceeding this many metered bytes (0: no limit)")
	fl.Uint64Var(&f.until, "until", 0, "stop at the first record with a timestamp >= this (ms, exclusive)")
	fl.BoolVar(&f.clamp, "clamp", false, "a --seq-num past the tail starts at the tail instead of failing")
	fl.BoolVar(&f.follow, "follow", false, "at the tail, wait for new records instead of stopping")
	fl.StringVar(&f.committerTok, "committer-token", "", "with --follow, bearer token of the stream's committer (a sluice serve daemon's --auth-token; prefer SLUICE_COMMITTER_TOKEN), whose watch tells of new records at once; with --store only")
	fl.Var(newEnum(&f.format, "json", "json", "base64", "raw"), "format", "output format: json, base64 or raw")
	fl.BoolVar(&f.skipCommands, "skip-commands", false, "leave command records (fence, trim) out")
	cmd.MarkFlagsMutuallyExclusive("seq-num", "timestamp", "tail-offset")
	return cmd
}

// request builds the read request from the flags.
func (f *readFlags) request(cmd *cobra.Command) consumer.ReadRequest {
	fl := cmd.Flags()
	// raw prints no command record: leave them out of the read, so that --count and
	// --bytes count what is printed.
	req := consumer.ReadRequest{Follow: f.follow, SkipCommands: f.skipCommands || f.format == "raw"}
	switch {
	case fl.Changed("timestamp"):
		req.Start = consumer.AtTimestamp(f.timestamp)
	case fl.Changed("tail-offset"):
		req.Start = consumer.AtTailOffset(f.tailOffset)
	default:
		req.Start = consumer.AtSeqNum(f.seqNum)
	}
	if f.clamp {
		req.Start = req.Start.Clamped()
	}
	// 0 is no limit, as in S2's API (count=0, bytes=0).
	if fl.Changed("count") && f.count > 0 {
		n := f.count
		req.Count = &n
	}
	if fl.Changed("bytes") && f.bytes > 0 {
		n := f.bytes
		req.Bytes = &n
	}
	if fl.Changed("until") {
		n := f.until
		req.Until = &n
	}
	return req
}

// newReader returns a consumer.Reader of a stream.
func (e *libEnv) newReader(st stream.Stream) (*consumer.Reader, error) {
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = e.store
	cfg.Stream = st
	cfg.Logger = e.log
	return consumer.NewReader(cfg)
}

// readErr explains a read's failure.
func (e *libEnv) readErr(name string, err error) error {
	var re *consumer.RangeError
	switch {
	case errors.As(err, &re):
		return fmt.Errorf("%s: --seq-num %d is past the tail, which is at seq_num %d (use --clamp to start at the tail)", e.where(name), re.Start, re.Tail.SeqNum)
	case errors.Is(err, consumer.ErrCorrupt), errors.Is(err, consumer.ErrMissingObject):
		return fmt.Errorf("%s: %w (the read stopped here; nothing was skipped)", e.where(name), err)
	}
	return e.streamErr(name, err)
}

func runRead(cmd *cobra.Command, g *globals, f *readFlags, name string) error {
	ctx := cmd.Context()
	req := f.request(cmd)
	if err := req.Validate(); err != nil {
		return err
	}
	b, err := openBackend(ctx, g, &f.basin)
	if err != nil {
		return err
	}
	defer b.close()
	if sb, ok := b.(*storeBackend); ok {
		sb.followToken = f.committerTok
	}
	sess, err := b.openRead(ctx, name, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer sess.close()
	out := newJSONOut(cmd.OutOrStdout())
	for {
		recs, err := sess.next(ctx)
		if err == nil {
			err = writeRecords(out, f.format, recs)
			if err == nil {
				err = out.flush()
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, consumer.ErrDone):
			return out.flush()
		case ctx.Err() != nil:
			// SIGINT/SIGTERM ends a read (typically a --follow) cleanly.
			return out.flush()
		default:
			_ = out.flush()
			return err
		}
	}
}

// writeRecords writes records in a read format (json, base64 or raw) without flushing. raw
// has no headers to mark a command record by: its callers leave them out of the read (read
// with --format raw skips them; consume refuses --include-commands with raw).
func writeRecords(out *jsonOut, format string, recs []consumer.SequencedRecord) error {
	for i := range recs {
		r := &recs[i]
		if format == "raw" {
			if _, err := out.w.Write(r.Body); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
			if err := out.w.WriteByte('\n'); err != nil {
				return fmt.Errorf("writing output: %w", err)
			}
			continue
		}
		rj := encodeRecordJSON(r, format == "base64")
		if err := out.writeNoFlush(rj); err != nil {
			return err
		}
	}
	return nil
}

// encodeRecordJSON renders one read record.
func encodeRecordJSON(r *consumer.SequencedRecord, b64 bool) recordJSON {
	return encodeRecord(r.SeqNum, r.Timestamp, batchfmt.Record{Headers: r.Headers, Body: r.Body}, b64)
}
