package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluice-dev/sluice/internal/bench"
	"github.com/sluice-dev/sluice/objectstore"
)

type benchStreamsFlags struct {
	streams       []int
	modes         []string
	rate          float64
	duration      time.Duration
	warmup        time.Duration
	recordBytes   int
	storeLatency  time.Duration
	maxInFlight   int
	appendTimeout time.Duration
	json          bool
	cmdLine       map[string]bool
}

func newBenchStreamsCmd(g *globals) *cobra.Command {
	f := &benchStreamsFlags{}
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "Measure one daemon serving one stream against many at the same total rate",
		Long: `Start a daemon in this process (sluice serve's defaults) for each row, one row per
--streams value and --modes entry, and drive it through its S2 HTTP API as S2 clients do:
HTTP/2, POST /v1/streams/{stream}/records with JSON, one record of --record-bytes per
append. Every row sends the same --rate appends a second in all, spread evenly over its
streams (append k goes to stream k mod N, on schedule at k/rate: 1,000 streams at 1,000/s
is one append a second each). Sends are open loop: each goes when it is due, whether or
not earlier ones were answered, with at most --max-in-flight awaiting an answer. At the
limit a send waits; a send that goes more than 10ms after it was due (at the limit, or with
the process short of CPU) counts as late, and one not sent when the window ends as failed:
not sent. A row's streams are created first through the API, 32 at a time, and
not counted. The row runs --warmup (not counted) then --duration (the window), then waits
for the answers still due (each append gives up after --append-timeout) and closes the
daemon; nothing of a row is left running when the next starts.

Each row gets a fresh store: without --store (flag, SLUICE_STORE or --config) a new
temporary directory with the file store, removed afterwards; with --store, a new prefix
bench-streams-<random>/row-<n> in it, whose objects are deleted afterwards. Every store
request is delayed by --store-latency before it goes and again before its answer returns,
so a local directory behaves like a cloud store (0 adds nothing).

Figures per row, over the window:
  appends/s        offered (due in the window) and sustained (acks that arrived in it)
  failures         appends due in the window that failed, by kind: "http <status> <code>",
                   "timeout" (no answer in --append-timeout), "transport", "bad ack" (an
                   answer that does not acknowledge one record), "not sent"
  sent late        appends sent more than 10ms after they were due
  ack              p50, p99, max from when an append was due to its answer, for the
                   appends due in the window (also those answered after it)
  store            requests a second by operation (PUT, GET, LIST, DELETE, HEAD) and by
                   purpose (commit, poll, fetch, gc, other), all of them, and PUTs per
                   append (the window's PUTs over its acks)
  RSS, heap        this process's VmRSS (/proc/self/status) and Go heap in use, at the
                   row's start (after a GC), the highest of one sample a second, and at its
                   end; the process holds the load generator as well as the daemon

Modes set the daemon's config: ` + strings.Join(bench.DaemonModes(), ", ") + ` (manifest: today's path, each
stream's commits in its own manifest).

Progress goes to stderr: a line per phase and per second. The result is a Markdown table,
one column per row; --json prints one JSON object instead: {"settings": {...}, "rows":
[...]}. The daemon's logs are discarded unless --log-level is given. On SIGINT/SIGTERM the
row stops, the daemon closes, and the rows so far are printed (exit 1).`,
		Example: `  sluice bench streams
  sluice bench streams --streams 1,1000,10000 --rate 1000 --duration 20s --store-latency 15ms
  sluice bench streams --store 's3://bucket/bench?region=us-east-1' --store-latency 0 --json`,
		Args: cobra.NoArgs,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			f.cmdLine = map[string]bool{}
			cmd.Flags().Visit(func(fl *pflag.Flag) { f.cmdLine[fl.Name] = true })
			return applyConfig(cmd)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchStreams(cmd, g, f)
		},
	}
	fl := cmd.Flags()
	fl.IntSliceVar(&f.streams, "streams", []int{1, 1000}, "streams of each row, comma-separated: one row per value")
	fl.StringSliceVar(&f.modes, "modes", []string{"manifest"}, "daemon modes to compare, comma-separated: each --streams value runs in each ("+strings.Join(bench.DaemonModes(), ", ")+")")
	fl.Float64Var(&f.rate, "rate", 1000, "appends a second over all streams of a row")
	fl.Var(newDurationValue(&f.duration, 20*time.Second), "duration", "measured window of each row")
	fl.Var(newDurationValue(&f.warmup, 3*time.Second), "warmup", "sending before the window, not counted")
	fl.IntVar(&f.recordBytes, "record-bytes", 100, "body bytes of the one record of each append")
	fl.Var(newDurationValue(&f.storeLatency, 15*time.Millisecond), "store-latency", "added to each store request each way (0: none)")
	fl.IntVar(&f.maxInFlight, "max-in-flight", bench.DefaultMaxInFlight, "appends awaiting an answer at most")
	fl.Var(newDurationValue(&f.appendTimeout, bench.DefaultAppendTimeout), "append-timeout", "how long an append waits for its answer before it counts as a timeout")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of the table")
	return cmd
}

func (f *benchStreamsFlags) validate() error {
	var errs []error
	if len(f.streams) == 0 {
		errs = append(errs, errors.New("--streams: give at least one number of streams"))
	}
	for _, n := range f.streams {
		if n < 1 {
			errs = append(errs, fmt.Errorf("invalid value %d in --streams: must be at least 1", n))
		}
	}
	if len(f.modes) == 0 {
		errs = append(errs, errors.New("--modes: give at least one mode"))
	}
	if f.cmdLine["endpoint"] {
		errs = append(errs, errors.New("--endpoint: bench streams runs its own daemon; give --store for its store"))
	}
	if f.maxInFlight < 1 {
		errs = append(errs, fmt.Errorf("invalid value %d for --max-in-flight: must be at least 1", f.maxInFlight))
	}
	if f.appendTimeout <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --append-timeout: must be positive", f.appendTimeout))
	}
	for _, m := range f.modes {
		// Everything else is checked by the config of each row.
		c := f.config(1, m, nil)
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("invalid flags: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (f *benchStreamsFlags) config(streams int, mode string, log *slog.Logger) bench.StreamsConfig {
	return bench.StreamsConfig{
		Streams: streams, Mode: mode, Rate: f.rate, Warmup: f.warmup, Duration: f.duration,
		RecordBytes: f.recordBytes, StoreLatency: f.storeLatency, MaxInFlight: f.maxInFlight,
		AppendTimeout: f.appendTimeout, Progress: os.Stderr, Logger: log,
	}
}

// benchStreamsJSON is --json's output.
type benchStreamsJSON struct {
	Settings struct {
		Store          string   `json:"store"`
		TempStore      bool     `json:"temporary_store,omitempty"`
		Streams        []int    `json:"streams"`
		Modes          []string `json:"modes"`
		Rate           float64  `json:"rate"`
		DurationS      float64  `json:"duration_s"`
		WarmupS        float64  `json:"warmup_s"`
		RecordBytes    int      `json:"record_bytes"`
		StoreLatencyMs float64  `json:"store_latency_ms"`
	} `json:"settings"`
	Rows []*bench.StreamsRow `json:"rows"`
}

func runBenchStreams(cmd *cobra.Command, g *globals, f *benchStreamsFlags) error {
	ctx := cmd.Context()
	if err := f.validate(); err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	if f.cmdLine["log-level"] {
		var err error
		if log, err = newLogger(g.logLevel, g.logFormat); err != nil {
			return err
		}
	}
	var out benchStreamsJSON
	s := &out.Settings
	s.Streams, s.Modes, s.Rate, s.RecordBytes = f.streams, f.modes, f.rate, f.recordBytes
	s.DurationS, s.WarmupS, s.StoreLatencyMs = f.duration.Seconds(), f.warmup.Seconds(), float64(f.storeLatency)/1e6
	rows := newRowStores(g, cmd.Flags().Changed("store"), log)
	defer rows.close()
	s.Store, s.TempStore = rows.describe(), rows.temp
	n := 0
	for _, streams := range f.streams {
		for _, mode := range f.modes {
			n++
			store, cleanup, err := rows.open(ctx, n)
			if err != nil {
				return err
			}
			row, err := bench.RunStreams(ctx, store, f.config(streams, mode, log))
			if cerr := cleanup(); cerr != nil {
				fmt.Fprintf(os.Stderr, "bench streams: removing the store of row %d: %v\n", n, cerr)
			}
			if err != nil {
				return err
			}
			out.Rows = append(out.Rows, row)
			if row.Interrupted {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if f.json {
		if err := newJSONOut(cmd.OutOrStdout()).write(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "sluice bench streams: %g appends/s of one %d-byte record, %s window after %s warmup, store %s with %s each way\n\n",
			f.rate, f.recordBytes, f.duration, f.warmup, s.Store, f.storeLatency)
		if err := bench.WriteStreamsTable(cmd.OutOrStdout(), out.Rows); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: the rows so far are printed")
	}
	return nil
}

// rowStores gives each row a fresh store: a temporary directory, or a prefix of --store.
type rowStores struct {
	g    *globals
	temp bool
	log  *slog.Logger
	run  string            // the prefix of this run's rows in --store
	base objectstore.Store // --store, opened at the first row
}

func newRowStores(g *globals, given bool, log *slog.Logger) *rowStores {
	return &rowStores{g: g, temp: !given, log: log, run: "bench-streams-" + randomHex(4)}
}

func (r *rowStores) describe() string {
	if r.temp {
		return "a new temporary directory per row"
	}
	return redactURL(r.g.store) + " under " + r.run + "/"
}

// open returns row n's store and what removes it; the caller calls cleanup after the row.
func (r *rowStores) open(ctx context.Context, n int) (objectstore.Store, func() error, error) {
	if r.temp {
		dir, err := os.MkdirTemp("", "sluice-bench-streams-")
		if err != nil {
			return nil, nil, err
		}
		s, err := openStore(ctx, dir, r.log)
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return s, func() error { return errors.Join(s.Close(), os.RemoveAll(dir)) }, nil
	}
	if r.base == nil {
		s, err := openStore(ctx, r.g.store, r.log)
		if err != nil {
			return nil, nil, err
		}
		r.base = s
	}
	prefix := fmt.Sprintf("%s/row-%d", r.run, n)
	s, err := objectstore.WithPrefix(r.base, prefix)
	if err != nil {
		return nil, nil, err
	}
	return s, func() error { return deleteAll(context.WithoutCancel(ctx), r.base, prefix+"/") }, nil
}

func (r *rowStores) close() {
	if r.base != nil {
		r.base.Close()
	}
}

// deleteAll deletes every object under prefix in s, 16 at a time.
func deleteAll(ctx context.Context, s objectstore.Store, prefix string) error {
	keys := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				if err := s.Delete(ctx, k); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	lerr := objectstore.ListAll(ctx, s, prefix, func(o objectstore.ObjectInfo) error { keys <- o.Key; return nil })
	close(keys)
	wg.Wait()
	return errors.Join(append(errs, lerr)...)
}
