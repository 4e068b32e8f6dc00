package main

import (
	"context"
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
			return withEngine(ctx, g, func(e *libEnv, en *engine.Engine) error {
				info, err := en.CreateBasin(ctx, args[0], nil)
				if err != nil {
					return e.basinErr(args[0], err)
				}
				e.log.Debug("basin created", "basin", args[0])
				return printJSON(cmd.OutOrStdout(), basinInfo(info))
			})
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
			return withEngine(ctx, g, func(_ *libEnv, en *engine.Engine) error {
				out := newJSONOut(cmd.OutOrStdout())
				for n := 0; limit == 0 || n < limit; {
					page := s2api.MaxListLimit
					if limit > 0 {
						page = min(page, limit-n)
					}
					infos, more, err := en.ListBasins(ctx, prefix, startAfter, page)
					if err != nil {
						return fmt.Errorf("listing basins in store %s: %w%s", redactURL(g.store), err, storeHint(err))
					}
					for _, info := range infos {
						if err := out.writeNoFlush(basinInfo(info)); err != nil {
							return err
						}
						n++
					}
					if !more || len(infos) == 0 {
						break
					}
					startAfter = infos[len(infos)-1].Name
				}
				return out.flush()
			})
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
			return withEngine(ctx, g, func(e *libEnv, en *engine.Engine) error {
				if err := en.DeleteBasin(ctx, args[0]); err != nil {
					return e.basinErr(args[0], err)
				}
				e.log.Debug("basin deleted", "basin", args[0])
				return printJSON(cmd.OutOrStdout(), map[string]string{"deleted": args[0]})
			})
		},
	}
}

// withEngine runs fn with the command's store (the root namespace) and an engine on it, for
// the basin operations the CLI shares with the daemon.
func withEngine(ctx context.Context, g *globals, fn func(*libEnv, *engine.Engine) error) error {
	e, err := openLib(ctx, g, nil)
	if err != nil {
		return err
	}
	defer e.close()
	en, err := newEngine(e)
	if err != nil {
		return err
	}
	defer en.Close(context.Background())
	return fn(e, en)
}
