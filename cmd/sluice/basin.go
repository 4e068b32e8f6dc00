package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/stream"
)

// basinNameRule is S2's rule for basin names, for help texts and errors.
const basinNameRule = "8 to 48 characters of lower-case letters, digits and '-', not starting or ending with '-'"

func newBasinCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "basin",
		Short: "Create, list and delete basins",
		Long: `Create, list and delete the basins of the store, as the daemon's S2 API does
(POST, GET and DELETE /v1/basins), without a daemon.

A basin is a namespace of streams: S2's API serves only the streams of basins, and the
stream commands reach them with --basin NAME. Its marker lives at basins/<NAME>/basin in
the store, its streams under basins/<NAME>/streams/. Basin names follow S2's rule:
` + basinNameRule + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBasinCreateCmd(g), newBasinListCmd(g), newBasinDeleteCmd(g))
	return cmd
}

// basinInfo is a basin as S2's API describes it (the daemon's list and create answers).
func basinInfo(b engine.BasinInfo) s2api.BasinInfo {
	return s2api.BasinInfo{Name: b.Name, CreatedAt: b.CreatedAt}
}

// validateBasinArg checks a basin name given as an argument, in the words of S2's rule.
func validateBasinArg(name string) error {
	var ne *stream.NameError
	if err := stream.ValidateBasinName(name); errors.As(err, &ne) {
		return fmt.Errorf("invalid basin name %q: %s (S2's rule: %s)", name, ne.Reason, basinNameRule)
	} else if err != nil {
		return err
	}
	return nil
}

// basinErr turns the engine's errors about a basin into messages a user can act on.
func (e *libEnv) basinErr(name string, err error) error {
	where := fmt.Sprintf("basin %q in store %s", name, redactURL(e.g.store))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrBasinNotFound):
		if perr := e.probe(); perr != nil && e.ctx.Err() == nil {
			// The store's failure, not the basin's absence (an S3 bucket that does not exist).
			return fmt.Errorf("%s: %w%s", where, perr, storeHint(perr))
		}
		return fmt.Errorf("%s does not exist (sluice basin list lists the basins)", where)
	case errors.Is(err, engine.ErrBasinExists):
		return fmt.Errorf("%s already exists", where)
	}
	return fmt.Errorf("%s: %w%s", where, err, storeHint(err))
}

func newBasinCreateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME",
		Short: "Create a basin",
		Long: `Create the basin NAME, with S2's default basin config (no default stream config,
streams not created on append or read; the daemon's PATCH /v1/basins/NAME changes it). It
fails if the basin exists. It prints the basin as the daemon's POST /v1/basins answers:
{"name":NAME,"created_at":RFC3339,"deleted_at":null}.

Basin names follow S2's rule:
` + basinNameRule + `.`,
		Example: `  sluice basin create my-basin
  sluice stream create events --basin my-basin`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := validateBasinArg(args[0]); err != nil {
				return err
			}
			g.createsStore = true
			b, err := openBackend(ctx, g, nil)
			if err != nil {
				return err
			}
			defer b.close()
			info, err := b.createBasin(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), info)
		},
	}
}

func newBasinListCmd(g *globals) *cobra.Command {
	var prefix, startAfter string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List basins",
		Long: `List the basins of the store, one JSON object per line in name order, each as the
daemon's GET /v1/basins lists it: {"name":NAME,"created_at":RFC3339,"deleted_at":null}.
(S2 also sends a "state", deprecated there; the daemon does not, and deleted_at is always
null: a deleted basin is gone.)`,
		Example: `  sluice basin list --prefix prod-`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if limit < 0 {
				return fmt.Errorf("invalid value %d for --limit: must be >= 0 (0 = all)", limit)
			}
			b, err := openBackend(ctx, g, nil)
			if err != nil {
				return err
			}
			defer b.close()
			out := newJSONOut(cmd.OutOrStdout())
			if err := b.listBasins(ctx, prefix, startAfter, limit, func(info s2api.BasinInfo) error { return out.writeNoFlush(info) }); err != nil {
				_ = out.flush()
				return err
			}
			return out.flush()
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "list only basins whose names start with this")
	cmd.Flags().StringVar(&startAfter, "start-after", "", "list only basins whose names sort after this")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many basins (0 = all)")
	return cmd
}

func newBasinDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a basin and all its streams",
		Long: `Delete the basin NAME as the daemon's DELETE /v1/basins/NAME does: every stream of
the basin, each as "sluice stream delete" deletes it (its manifest, then its objects), and
then the basin's marker. This cannot be undone. S2 marks a basin "deleting" and removes it
in the background; here it is gone when the command returns. Interrupted, the basin stays
with the streams not yet deleted: run it again. Objects a producer still running writes
afterwards are left for "sluice gc". It prints {"deleted":NAME}.`,
		Example: `  sluice basin delete my-basin`,
		Args:    exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := validateBasinArg(args[0]); err != nil {
				return err
			}
			b, err := openBackend(ctx, g, nil)
			if err != nil {
				return err
			}
			defer b.close()
			if err := b.deleteBasin(ctx, args[0]); err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string]string{"deleted": args[0]})
		},
	}
}
