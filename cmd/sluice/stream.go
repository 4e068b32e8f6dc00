package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/s2api"
)

func newStreamCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Create, list, delete and configure streams",
		Long: `Create, list, delete and configure the streams of the store.

A stream named NAME lives under streams/<encoded NAME>/ in the store (or
basins/<basin>/streams/<encoded NAME>/ with --basin): its manifest, its batch
objects and its sealed segments. Names are 1 to 512 bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newStreamCreateCmd(g), newStreamListCmd(g), newStreamDeleteCmd(g), newStreamConfigCmd(g))
	return cmd
}

// configFlags are the stream configuration flags (the streams seed's settings) of "stream create" and "stream config".
type configFlags struct {
	retentionAge      time.Duration
	retentionInfinite bool
	tsMode            string
	tsUncapped        bool
	deleteOnEmpty     time.Duration
	queueMode         bool
}

const configFlagsHelp = `Stream configuration (S2's stream config):
  --retention-age D          drop records older than D (by arrival), e.g. 7d, 36h
  --retention-infinite       keep records until trimmed (a new stream's default)
  --timestamping-mode M      client-prefer (a new stream's default), client-require or arrival
  --timestamping-uncapped    allow client timestamps in the future
  --delete-on-empty-min-age D  delete the stream once empty for D (0 disables; the GC does it)
  --queue-mode               drop records once every consumer group acknowledged them`

func (f *configFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Var(newDurationValue(&f.retentionAge, 0), "retention-age", "retention policy: keep records this long (e.g. 7d, 36h); at least 1s")
	fl.BoolVar(&f.retentionInfinite, "retention-infinite", false, "retention policy: keep records until trimmed")
	fl.Var(newEnum(&f.tsMode, "client-prefer", "client-prefer", "client-require", "arrival"), "timestamping-mode", "timestamping mode: client-prefer, client-require or arrival")
	fl.BoolVar(&f.tsUncapped, "timestamping-uncapped", false, "allow client timestamps later than the arrival time")
	fl.Var(newDurationValue(&f.deleteOnEmpty, 0), "delete-on-empty-min-age", "delete the stream after it has been empty this long (0 disables)")
	fl.BoolVar(&f.queueMode, "queue-mode", false, "drop records once every consumer group has acknowledged them")
	markExclusive(cmd, "retention-age", "retention-infinite")
}

var configFlagNames = []string{"retention-age", "retention-infinite", "timestamping-mode", "timestamping-uncapped", "delete-on-empty-min-age", "queue-mode"}

// changed reports whether any configuration flag was set (command line, or, where the flags
// are not command-line only, environment or file).
func (f *configFlags) changed(cmd *cobra.Command) bool {
	for _, n := range configFlagNames {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// apply writes the set flags into c and reports every problem at once, naming the flags.
func (f *configFlags) apply(cmd *cobra.Command, c *manifest.Config) error {
	fl := cmd.Flags()
	var errs []error
	if fl.Changed("retention-age") && fl.Changed("retention-infinite") && f.retentionInfinite {
		errs = append(errs, errors.New("--retention-age and --retention-infinite exclude each other"))
	}
	if fl.Changed("retention-age") {
		switch {
		case f.retentionAge < time.Second || f.retentionAge%time.Second != 0:
			errs = append(errs, fmt.Errorf("invalid value %v for --retention-age: want a whole number of seconds, at least 1s", f.retentionAge))
		default:
			c.Retention = manifest.Retention{AgeSecs: uint64(f.retentionAge / time.Second)}
		}
	}
	if fl.Changed("retention-infinite") {
		if f.retentionInfinite {
			c.Retention = manifest.Retention{Infinite: true}
		} else if !fl.Changed("retention-age") {
			errs = append(errs, errors.New("--retention-infinite=false needs --retention-age"))
		}
	}
	if fl.Changed("timestamping-mode") {
		m, err := manifest.ParseTimestampingMode(f.tsMode)
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for --timestamping-mode: %w", f.tsMode, err))
		}
		c.Timestamping.Mode = m
	}
	if fl.Changed("timestamping-uncapped") {
		c.Timestamping.Uncapped = f.tsUncapped
	}
	if fl.Changed("delete-on-empty-min-age") {
		if f.deleteOnEmpty%time.Second != 0 {
			errs = append(errs, fmt.Errorf("invalid value %v for --delete-on-empty-min-age: want a whole number of seconds", f.deleteOnEmpty))
		}
		c.DeleteOnEmpty = manifest.DeleteOnEmpty{MinAgeSecs: uint64(f.deleteOnEmpty / time.Second)}
	}
	if fl.Changed("queue-mode") {
		c.QueueMode = f.queueMode
	}
	if len(errs) == 0 {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// streamConfigJSON is a stream configuration in the streams seed's JSON shape.
type streamConfigJSON struct {
	RetentionPolicy retentionJSON     `json:"retention_policy"`
	Timestamping    timestampingJSON  `json:"timestamping"`
	DeleteOnEmpty   deleteOnEmptyJSON `json:"delete_on_empty"`
	QueueMode       bool              `json:"queue_mode"`
}

type retentionJSON struct {
	Age      *uint64   `json:"age,omitempty"`
	Infinite *struct{} `json:"infinite,omitempty"`
}

type timestampingJSON struct {
	Mode     string `json:"mode"`
	Uncapped bool   `json:"uncapped"`
}

type deleteOnEmptyJSON struct {
	MinAgeSecs uint64 `json:"min_age_secs"`
}

func configJSON(c manifest.Config) streamConfigJSON {
	out := streamConfigJSON{
		Timestamping:  timestampingJSON{Mode: c.Timestamping.Mode.String(), Uncapped: c.Timestamping.Uncapped},
		DeleteOnEmpty: deleteOnEmptyJSON{MinAgeSecs: c.DeleteOnEmpty.MinAgeSecs},
		QueueMode:     c.QueueMode,
	}
	if c.Retention.Infinite {
		out.RetentionPolicy.Infinite = &struct{}{}
	} else {
		age := c.Retention.AgeSecs
		out.RetentionPolicy.Age = &age
	}
	return out
}

// streamInfoJSON is what stream create and stream config print.
type streamInfoJSON struct {
	Stream string           `json:"stream"`
	Basin  string           `json:"basin,omitempty"`
	Config streamConfigJSON `json:"config"`
}

func newStreamCreateCmd(g *globals) *cobra.Command {
	var basin string
	cf := &configFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a stream",
		Long: `Create the stream NAME, empty, with the given configuration (defaults: infinite
retention, client-prefer timestamping, capped, delete_on_empty disabled, not a queue).
It fails if the stream exists. It prints the stream and its configuration as JSON.

` + configFlagsHelp,
		Example: `  sluice stream create orders
  sluice stream create logs --retention-age 7d --timestamping-mode arrival`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg := manifest.DefaultConfig()
			if err := cf.apply(cmd, &cfg); err != nil {
				return err
			}
			if err := validateNewStreamName(args[0]); err != nil {
				return err
			}
			g.createsStore = true
			b, err := openBackend(ctx, g, &basin)
			if err != nil {
				return err
			}
			defer b.close()
			if err := b.createStream(ctx, args[0], cfg); err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), streamInfoJSON{Stream: args[0], Basin: basin, Config: configJSON(cfg)})
		},
	}
	addBasinFlag(cmd, &basin)
	cf.register(cmd)
	return cmd
}

func newStreamConfigCmd(g *globals) *cobra.Command {
	var basin string
	cf := &configFlags{}
	cmd := &cobra.Command{
		Use:   "config NAME",
		Short: "Show a stream's configuration, or reconfigure it",
		Long: `Show the configuration of the stream NAME as JSON. With configuration flags,
reconfigure it: change those settings (the others keep their values) with a conditional
write of the manifest, then show the result. Only flags given on this command line change
it: SLUICE_* variables and the --config file do not set them here, so showing never
writes. A shorter retention takes effect at the next GC pass.

` + configFlagsHelp,
		Example: `  sluice stream config orders
  sluice stream config orders --retention-age 24h`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if cf.changed(cmd) {
				// Check the flags before touching the store.
				probe := manifest.DefaultConfig()
				if err := cf.apply(cmd, &probe); err != nil {
					return err
				}
			}
			b, err := openBackend(ctx, g, &basin)
			if err != nil {
				return err
			}
			defer b.close()
			var change func(*manifest.Config) error
			if cf.changed(cmd) {
				change = func(c *manifest.Config) error {
					next := *c
					if err := cf.apply(cmd, &next); err != nil {
						return err
					}
					if next == *c {
						return manifest.ErrNoChange
					}
					*c = next
					return nil
				}
			}
			cfg, err := b.streamConfig(ctx, args[0], change)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), streamInfoJSON{Stream: args[0], Basin: basin, Config: configJSON(cfg)})
		},
	}
	addBasinFlag(cmd, &basin)
	cf.register(cmd)
	markCmdLineOnly(cmd, configFlagNames...)
	// A flag left out keeps the stream's value: no flag has a default to show here.
	cmd.Flags().Lookup("timestamping-mode").DefValue = ""
	return cmd
}

func newStreamListCmd(g *globals) *cobra.Command {
	var basin, prefix, startAfter string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List streams",
		Long: `List the streams of the store (of --basin, or of the root namespace), one JSON
object per line in name order, each as the daemon's GET /v1/streams lists it:
{"name":NAME,"created_at":RFC3339,"deleted_at":null} (created_at to the millisecond, in
UTC; deleted_at is always null: a deleted stream is gone). It reads each stream's manifest.`,
		Example: `  sluice stream list --prefix orders-`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if limit < 0 {
				return fmt.Errorf("invalid value %d for --limit: must be >= 0 (0 = all)", limit)
			}
			b, err := openBackend(ctx, g, &basin)
			if err != nil {
				return err
			}
			defer b.close()
			out := newJSONOut(cmd.OutOrStdout())
			if err := b.listStreams(ctx, prefix, startAfter, limit, func(info s2api.StreamInfo) error { return out.writeNoFlush(info) }); err != nil {
				_ = out.flush()
				return err
			}
			return out.flush()
		},
	}
	addBasinFlag(cmd, &basin)
	cmd.Flags().StringVar(&prefix, "prefix", "", "list only streams whose names start with this")
	cmd.Flags().StringVar(&startAfter, "start-after", "", "list only streams whose names sort after this")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many streams (0 = all)")
	return cmd
}

// listedStream is a stream as the daemon's list-streams answer describes it (see engine's
// streamInfo): created_at is the manifest's creation time, to the millisecond, in UTC.
func listedStream(name string, st *manifest.State) s2api.StreamInfo {
	return s2api.StreamInfo{Name: name, CreatedAt: time.UnixMilli(int64(st.CreatedMs)).UTC()}
}

func newStreamDeleteCmd(g *globals) *cobra.Command {
	var basin string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a stream and all its records",
		Long: `Delete the stream NAME: its manifest first (from then on the stream does not exist
and its producers and consumers fail), then its batch and segment objects: those the
manifest referenced and those written before its last commit. This cannot be undone.
Objects written after that (by a producer still running, or by a stream created again
under the same name meanwhile, whose objects are never touched) are left for "sluice gc".
It prints {"deleted":NAME,"objects":N}, N counting the manifest; through a daemon
(--endpoint), the daemon deletes it and it prints {"deleted":NAME}.`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			b, err := openBackend(ctx, g, &basin)
			if err != nil {
				return err
			}
			defer b.close()
			n, err := b.deleteStream(ctx, args[0])
			if err != nil {
				return err
			}
			out := map[string]any{"deleted": args[0]}
			if n != nil {
				out["objects"] = *n
			}
			return printJSON(cmd.OutOrStdout(), out)
		},
	}
	addBasinFlag(cmd, &basin)
	return cmd
}

// newEngine returns an engine on the command's store, for the operations the CLI shares
// with the daemon; the caller closes it.
func newEngine(e *libEnv) (*engine.Engine, error) {
	cfg := engine.DefaultConfig()
	cfg.Store = e.store
	cfg.Logger = e.log
	return engine.New(cfg)
}

// ensureBasin creates a basin's marker object if it is missing, so that the daemon (package
// engine) serves the basin and "sluice gc" finds its streams.
func ensureBasin(ctx context.Context, e *libEnv, basin string) error {
	en, err := newEngine(e)
	if err != nil {
		return err
	}
	defer en.Close(context.Background())
	if _, err := en.CreateBasin(ctx, basin, nil); err != nil && !errors.Is(err, engine.ErrBasinExists) {
		return fmt.Errorf("creating basin %q: %w%s", basin, err, storeHint(err))
	} else if err == nil {
		e.log.Info("basin created", "basin", basin)
	}
	return nil
}
