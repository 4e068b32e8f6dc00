package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// defaultStore is where sluice keeps its data when --store is not given.
const defaultStore = "file://./sluice-data"

// globals are the flags every command has.
type globals struct {
	store     string
	logLevel  string
	logFormat string
	// endpoint and token name a daemon and the caller's token: with endpoint set, the
	// stream and basin commands go through the daemon's S2 API instead of the store.
	endpoint, token string
	// createsStore is set by the commands that may make a new store (stream create, basin
	// create, append --create): for the others a missing directory of a file store given with --store (or
	// its variable or config key) is an error, a mistyped path, not an empty store to create.
	// The default store's missing directory is read as an empty store, and not made.
	createsStore bool
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "sluice",
		Short: "An ingest buffer on object storage",
		Long: `sluice buffers records on object storage (S3, a local directory, or memory).

Producers append records to streams; each append is acknowledged with its position
(seq_num, timestamp) once it is durable in the store. Consumers read streams in order from
any position, follow them live, and track their progress in consumer groups.

Every flag can also be set with an environment variable SLUICE_<FLAG> (upper case, '-' as
'_', e.g. SLUICE_STORE; an empty variable counts as unset) or in a YAML file given by
--config whose keys are flag names. Precedence: command line, then environment, then config
file, then default.

With --endpoint URL (or SLUICE_ENDPOINT) and --token (better: SLUICE_TOKEN), the basin and
stream commands, append, read, tail, trim, fence, consume and groups go through that
daemon's API instead of the store, with the same flags and output; they then need --basin
(or SLUICE_BASIN) for streams. gc and inspect need the store and refuse --endpoint.

Store URLs:
  file:///abs/dir or a plain path    a local directory (default ` + defaultStore + `)
  s3://bucket/prefix?region=R&endpoint=URL&path_style=true
                                     S3 or an S3-compatible server; credentials from the
                                     standard AWS chain (AWS_ACCESS_KEY_ID, ...); a
                                     request fails once the server has been silent for
                                     read_timeout (default 2m, 0s for none; add
                                     &read_timeout=10m on links under 0.3 Mbit/s)
  gs://bucket/prefix                 Google Cloud Storage; credentials from Google's chain
                                     (GOOGLE_APPLICATION_CREDENTIALS, ...), the emulator
                                     from STORAGE_EMULATOR_HOST
  azblob://container/prefix[?account=NAME]
                                     Azure Blob Storage; credentials from
                                     AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY
                                     or Azure's default credential chain
  mem://                             memory (lost on exit; for tests)

Instead of --store, --objstore.config-file FILE (or --objstore.config YAML) takes a Thanos
bucket config (type: S3, GCS, AZURE or FILESYSTEM; config:; prefix:), as Thanos, Loki,
Mimir and Cortex do.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// A --store or --endpoint on the command line (or in the environment) wins
			// over the other from a weaker level, as a shared config file may hold both.
			if cmd.Flags().Lookup("endpoint") != nil {
				markExclusive(cmd, "store", "endpoint")
			}
			if err := applyConfig(cmd); err != nil {
				return err
			}
			return checkMode(cmd, g)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.store, "store", defaultStore, "object store URL")
	pf.StringVar(&g.endpoint, "endpoint", "", "a daemon's URL (http://host:port): the stream and basin commands go through its S2 API instead of --store")
	pf.StringVar(&g.token, "token", "", "with --endpoint, the caller's bearer token (prefer SLUICE_TOKEN: flags show in ps)")
	addObjstoreFlags(root, g)
	pf.String("config", "", "YAML config file whose keys are flag names") // read by applyConfig
	pf.Var(newEnum(&g.logLevel, "info", "debug", "info", "warn", "error"), "log-level", "log level: debug, info, warn or error")
	pf.Var(newEnum(&g.logFormat, "text", "text", "json"), "log-format", "log format: text or json")
	root.AddCommand(newServeCmd(g))
	// These work on the store or, with --endpoint, through a daemon's S2 API.
	for _, c := range []*cobra.Command{newAppendCmd(g), newReadCmd(g), newTailCmd(g), newStreamCmd(g), newBasinCmd(g), newFenceCmd(g), newTrimCmd(g)} {
		root.AddCommand(throughDaemon(c))
	}
	// consume and groups mark themselves (throughDaemon); inspect and gc need the store:
	// with --endpoint, checkMode refuses them.
	root.AddCommand(newInspectCmd(g), newConsumeCmd(g), newGroupsCmd(g), newGCCmd(g))
	root.AddCommand(newTokenCmd(g))
	root.AddCommand(newVersionCmd())
	root.AddCommand(newBenchCmd(g))
	root.Version = buildVersion()
	root.SetVersionTemplate("sluice {{.Version}}\n")
	useStrictHelp(root)
	root.SetFlagErrorFunc(flagError)
	return root
}

// flagError adds a hint to pflag's "unknown shorthand flag" error, which is what an argument
// starting with '-' (a negative number, a fencing token) gets: "--" ends the flags.
func flagError(cmd *cobra.Command, err error) error {
	if strings.HasPrefix(err.Error(), "unknown shorthand flag") {
		use := strings.Fields(cmd.Use)
		return fmt.Errorf("%w (arguments that start with '-' go after \"--\", as in: %s -- %s)", err, cmd.CommandPath(), strings.Join(use[1:], " "))
	}
	return err
}

// useStrictHelp makes cobra's help command (kept for its completion of command names)
// refuse an unknown topic with an error (exit 1), as an unknown command is refused; cobra's
// printed the usage and exited 0.
func useStrictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, hc := range root.Commands() {
		if hc.Name() != "help" {
			continue
		}
		hc.Run = nil
		hc.RunE = func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 && cmd.HasSubCommands() {
				return fmt.Errorf("unknown help topic %q (sluice --help lists the commands)", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		}
	}
}
