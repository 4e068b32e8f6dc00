package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/bench"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

type benchFlags struct {
	endpoint      string
	committer     string
	authToken     string
	basin         string
	producers     int
	rate          float64
	recordSize    int
	duration      time.Duration
	appendSize    int
	flushInterval time.Duration
	json          bool
	plot          string
	cmdLine       map[string]bool // flags given on the command line
}

func newBenchCmd(g *globals) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency of a store or a daemon",
		Long: `Write a new stream (bench-<random>) for --duration with --producers concurrent
producers while a reader follows it, wait for the last acks and for the reader to catch
up (at most 30s), delete the stream, and print what was measured.

Targets:
  --store URL      the store itself, in this process: each producer is a library producer
                   of the stream, the reader a library reader woken by their acks (as in
                   the daemon). Without --store (flag, SLUICE_STORE or --config), a new
                   temporary directory, removed afterwards. --basin, if given, holds the
                   stream.
                   With --committer URL the producers send their commits to that daemon.
  --endpoint URL   a running daemon (sluice serve) through S2's HTTP API: each producer is
                   an HTTP client with one unary protobuf append in flight, the reader an
                   SSE read session; --auth-token is sent as the bearer token. The stream
                   goes in --basin, which must exist; without --basin, in a new basin
                   bench-<random>, deleted afterwards. Several daemons of one store,
                   comma-separated: each client sends its appends to them in turn (as a
                   balancer would); the reader and the stream's creation use the first.

Records have --record-size bytes of body and a header "t" holding their send time
(nanoseconds since the run began), from which the reader computes the end-to-end latency.
--rate is records per second of all producers together (0: as fast as the target takes
them). With --store each record is submitted on its own, and the producer batches them
(5 ms linger, up to 1000 records and 1 MiB per append, then --flush-interval in the batch
object); with --endpoint a client sends what queued up while its last append was in flight
(up to 1000 records and 1 MiB). --append-size K sends exactly K records per append instead.

Figures:
  records/s, MB/s  records and metered bytes acknowledged (body, headers and 8 per record;
                   MB = 10^6 bytes), over the time from the first send to the last ack
  ack              latency from a record's send to its ack: p50, p90, p99, max
  end-to-end       latency from a record's send to its delivery to the reader
  store requests   object-store requests during the run (the producers' and the reader's,
                   not those creating and deleting the stream), by operation and per GiB
                   acknowledged (metered). With --endpoint they are read from the daemon's
                   /metrics, so they count all its requests meanwhile, other clients' too,
                   and are left out when /metrics cannot be read.
At a --rate a record's latencies count from when it was due, so a target that falls behind
shows as latency, not as a lower rate. Percentiles are exact to about 1%.

A progress line per second goes to stderr (rewritten in place when stderr is a terminal).
--json prints one JSON object instead of the text: the settings (target, store or
endpoint, temporary_store, basin, stream, producers, rate, record_size, append_size,
duration_s) and the figures (records, bytes, elapsed_s, records_per_s, mb_per_s,
ack_p50_ms, ack_p90_ms, ack_p99_ms, ack_max_ms, e2e_records, e2e_p50_ms, e2e_p90_ms,
e2e_p99_ms, e2e_max_ms, store_requests as {op: n}, store_requests_total and
store_requests_per_gib). --plot FILE writes an SVG of the latency p50 and p99 of each
second over the run and of the latency distribution.

On SIGINT/SIGTERM it stops, deletes the stream, prints the figures so far and exits 1. A
failed append or read ends the run with an error (exit 1), after deleting the stream.`,
		Example: `  sluice bench --duration 10s
  sluice bench --store 's3://bucket/bench?region=us-east-1' --producers 4 --rate 10000 --json
  sluice bench --endpoint http://localhost:8080 --record-size 256 --plot latency.svg`,
		Args: cobra.NoArgs,
		// Root's hook, run here instead (cobra runs only the nearest), with the flags
		// parsed: --store is root's and in cmd.Flags() only now.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			f.cmdLine = map[string]bool{}
			cmd.Flags().Visit(func(fl *pflag.Flag) { f.cmdLine[fl.Name] = true })
			// A --store or --endpoint on the command line (or in the environment) wins
			// over the other from a weaker level, as a shared config file may hold both.
			markExclusive(cmd, "store", "endpoint")
			return applyConfig(cmd)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.endpoint, "endpoint", "", "URL of a daemon (http://host:port) to measure through S2's HTTP API instead of --store; several, comma-separated, to spread appends over daemons of one store")
	fl.StringVar(&f.committer, "committer", "", "with --store, a daemon (http://host:port) the producers send their commits to while the stream names no committer")
	fl.StringVar(&f.authToken, "auth-token", "", "with --endpoint, the daemon's bearer token (its --auth-token; prefer SLUICE_AUTH_TOKEN)")
	fl.StringVar(&f.basin, "basin", "", "basin of the stream (with --store, default the root namespace; with --endpoint, an existing basin, default a new one deleted afterwards)")
	fl.IntVar(&f.producers, "producers", 1, "concurrent producers")
	fl.Float64Var(&f.rate, "rate", 0, "records per second of all producers together (0: as fast as possible)")
	fl.IntVar(&f.recordSize, "record-size", 1024, fmt.Sprintf("bytes of body per record (1 to %d)", bench.MaxRecordSize))
	fl.Var(newDurationValue(&f.duration, 10*time.Second), "duration", "how long the producers send")
	fl.IntVar(&f.appendSize, "append-size", 0, "records per append (0: records are sent one at a time and batched)")
	fl.Var(newDurationValue(&f.flushInterval, producer.DefaultConfig().FlushInterval), "flush-interval", "with --store, how long a producer collects appends into one batch object")
	fl.BoolVar(&f.json, "json", false, "print the figures as one JSON object")
	fl.StringVar(&f.plot, "plot", "", "write an SVG plot of the latencies to this file")
	cmd.AddCommand(newBenchStreamsCmd(g))
	return cmd
}

// validate reports every problem of the flags at once.
func (f *benchFlags) validate(cmd *cobra.Command) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	fl := cmd.Flags()
	if f.producers < 1 {
		bad("invalid value %d for --producers: must be at least 1", f.producers)
	}
	if f.rate < 0 {
		bad("invalid value %v for --rate: must not be negative", f.rate)
	}
	if f.recordSize < 1 || f.recordSize > bench.MaxRecordSize {
		bad("invalid value %d for --record-size: must be 1 to %d bytes (1 MiB, an append's limit, less the record's other metered bytes)", f.recordSize, bench.MaxRecordSize)
	}
	if f.duration <= 0 {
		bad("invalid value %v for --duration: must be positive", f.duration)
	}
	if f.appendSize < 0 || f.appendSize > batchfmt.MaxAppendRecords {
		bad("invalid value %d for --append-size: must be 0 to %d", f.appendSize, batchfmt.MaxAppendRecords)
	}
	// Flags for the other target are refused on the command line; from the environment
	// or a config file shared with other commands they are ignored.
	if f.endpoint != "" {
		if fl.Changed("store") {
			bad("--store and --endpoint exclude each other: bench measures one of them")
		}
		if f.cmdLine["flush-interval"] {
			bad("--flush-interval applies to --store only (the daemon has its own: serve --flush-interval)")
		}
		if f.cmdLine["committer"] {
			bad("--committer applies to --store only (the daemons find their committer themselves)")
		}
	} else if f.cmdLine["auth-token"] {
		bad("--auth-token applies to --endpoint only")
	}
	if f.basin != "" {
		if err := stream.ValidateBasinName(f.basin); err != nil {
			bad("invalid value %q for --basin: %v", f.basin, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// What only the whole configuration can tell (an append of --append-size records
	// beyond the limit).
	c := f.config()
	if err := c.Validate(); err != nil {
		return fmt.Errorf("invalid flags: %w", err)
	}
	return nil
}

func (f *benchFlags) config() bench.Config {
	c := bench.Config{Producers: f.producers, Rate: f.rate, RecordSize: f.recordSize, Duration: f.duration, AppendSize: f.appendSize}
	c.Progress, c.ProgressOverwrite = os.Stderr, isTerminal(os.Stderr)
	return c
}

// benchJSON is --json's output: the settings and the figures.
type benchJSON struct {
	Target     string  `json:"target"` // "store" or "endpoint"
	Store      string  `json:"store,omitempty"`
	TempStore  bool    `json:"temporary_store,omitempty"` // a new directory, removed afterwards
	Endpoint   string  `json:"endpoint,omitempty"`
	Basin      string  `json:"basin,omitempty"`
	Stream     string  `json:"stream"`
	Producers  int     `json:"producers"`
	Rate       float64 `json:"rate"`
	RecordSize int     `json:"record_size"`
	AppendSize int     `json:"append_size"`
	DurationS  float64 `json:"duration_s"`
	bench.Summary
}

func runBench(cmd *cobra.Command, g *globals, f *benchFlags) error {
	ctx := cmd.Context()
	if err := f.validate(cmd); err != nil {
		return err
	}
	stream := "bench-" + randomHex(6)
	out := benchJSON{Stream: stream, Basin: f.basin, Producers: f.producers, Rate: f.rate, RecordSize: f.recordSize, AppendSize: f.appendSize, DurationS: f.duration.Seconds()}
	var target bench.Target
	if f.endpoint != "" {
		basin, makeBasin := f.basin, f.basin == ""
		if makeBasin {
			basin = "bench-" + randomHex(6)
		}
		t, err := bench.NewHTTPTarget(f.endpoint, f.authToken, basin, stream, makeBasin, f.producers)
		if err != nil {
			return fmt.Errorf("--endpoint: %w", err)
		}
		target, out.Target, out.Endpoint, out.Basin = t, "endpoint", f.endpoint, basin
	} else {
		if !cmd.Flags().Changed("store") {
			dir, err := os.MkdirTemp("", "sluice-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			g.store, out.TempStore = dir, true
		}
		g.createsStore = true
		e, err := openLib(ctx, g, &f.basin)
		if err != nil {
			return err
		}
		defer e.close()
		pcfg := producer.DefaultConfig()
		pcfg.FlushInterval = flushInterval(f.flushInterval)
		pcfg.DeliveryTimeout = defaultCLIDeliveryTimeout
		pcfg.Committer.URL = f.committer
		t, err := bench.NewStoreTarget(e.store, f.basin, stream, pcfg, e.log)
		if err != nil {
			return err
		}
		target, out.Target, out.Store = t, "store", redactURL(g.store)
	}
	res, err := bench.Run(ctx, target, f.config())
	if err != nil {
		return err
	}
	out.Summary = res.Summary()
	if f.json {
		if err := newJSONOut(cmd.OutOrStdout()).write(out); err != nil {
			return err
		}
	} else if err := writeBenchText(cmd.OutOrStdout(), &out, res); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	if f.plot != "" {
		if err := writePlot(f.plot, res); err != nil {
			return err
		}
	}
	if res.Interrupted {
		return fmt.Errorf("interrupted after %.1fs; the stream %s was deleted", res.Elapsed.Seconds(), stream)
	}
	return nil
}

func writeBenchText(w io.Writer, o *benchJSON, res *bench.Result) error {
	where := "store " + o.Store
	if o.TempStore {
		where += " (temporary)"
	}
	if o.Endpoint != "" {
		where = "endpoint " + o.Endpoint
	}
	rate := "as fast as possible"
	if o.Rate > 0 {
		rate = fmt.Sprintf("at %g records/s", o.Rate)
	}
	batching := "records sent one at a time"
	if o.AppendSize > 0 {
		batching = fmt.Sprintf("%d records per append", o.AppendSize)
	}
	producers := "1 producer"
	if o.Producers != 1 {
		producers = fmt.Sprintf("%d producers", o.Producers)
	}
	if _, err := fmt.Fprintf(w, "sluice bench: %s, stream %s: %s, %d-byte records %s, %s, for %s\n",
		where, o.Stream, producers, o.RecordSize, rate, batching, time.Duration(o.DurationS*float64(time.Second))); err != nil {
		return err
	}
	return res.WriteText(w)
}

func writePlot(path string, res *bench.Result) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	if err := res.WriteSVG(fh); err != nil {
		fh.Close()
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	return nil
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}
