package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/stream"
)

func newGroupsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List, reset and delete the consumer groups of a stream",
		Long: `List, reset and delete the consumer groups of a stream.

A group's state is in the stream's manifest: its epoch (bumped by each member that joins,
which fences the one before) and its checkpoint (the first seq_num not acknowledged; a
member that joins resumes there). sluice consume runs a member.

Each group prints as one JSON line:
  {"group":"billing","epoch":3,"checkpoint":1200,"lag_records":34,"lag_seconds":2.5}
lag_records counts the readable records from the checkpoint to the tail (records below
the trim point or dropped by retention are never delivered, so they do not count);
lag_seconds is the age of the oldest record not yet acknowledged, by its timestamp and
this machine's clock (the daemon's, through one). Both are 0 when the group is caught up.

With --endpoint (or SLUICE_ENDPOINT) they run through a daemon: list needs a token that may
read the stream, reset and delete one that may reconfigure it (reconfigure-stream).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newGroupsListCmd(g), newGroupsResetCmd(g), newGroupsDeleteCmd(g))
	return throughDaemon(cmd)
}

// groupJSONLine is one line of groups list and groups reset: the daemon's group routes
// answer the same fields.
type groupJSONLine s2api.GroupInfo

func groupLine(gi consumer.GroupInfo) groupJSONLine {
	return groupJSONLine{Group: gi.Group, Epoch: gi.Epoch, Checkpoint: gi.Checkpoint, LagRecords: gi.Lag.Records, LagSeconds: gi.Lag.Seconds}
}

// groupsConfig is the consumer config of a groups command on stream st.
func (e *libEnv) groupsConfig(st stream.Stream) consumer.Config {
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = e.store
	cfg.Stream = st
	cfg.Logger = e.log
	return cfg
}

func newGroupsListCmd(g *globals) *cobra.Command {
	var basin string
	cmd := &cobra.Command{
		Use:   "list STREAM",
		Short: "Print each consumer group of STREAM with its lag, one JSON line each",
		Long: `Print each consumer group of STREAM, sorted by name, as one JSON line:
  {"group","epoch","checkpoint","lag_records","lag_seconds"}
(see sluice groups --help). A stream without groups prints nothing.`,
		Example: `  sluice groups list orders
  sluice groups list orders | jq -r 'select(.lag_seconds > 60) | .group'`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if g.endpoint != "" {
				return groupsListDaemon(ctx, g, basin, args[0])
			}
			e, st, err := openStream(ctx, g, &basin, args[0])
			if err != nil {
				return err
			}
			defer e.close()
			groups, err := consumer.ListGroups(ctx, e.groupsConfig(st), time.Now())
			if err != nil {
				return e.readErr(args[0], err)
			}
			out := newJSONOut(os.Stdout)
			for _, gi := range groups {
				if err := out.writeNoFlush(groupLine(gi)); err != nil {
					return err
				}
			}
			return out.flush()
		},
	}
	addBasinFlag(cmd, &basin)
	return cmd
}

type groupsResetFlags struct {
	basin       string
	toSeqNum    uint64
	toTimestamp uint64
	toTail      bool
}

func newGroupsResetCmd(g *globals) *cobra.Command {
	f := &groupsResetFlags{}
	cmd := &cobra.Command{
		Use:   "reset STREAM GROUP --to-seq-num N | --to-timestamp MS | --to-tail",
		Short: "Move a consumer group's checkpoint, fencing its running member",
		Long: `Move the checkpoint of consumer group GROUP of STREAM, backwards or forwards, to
exactly one of:
  --to-seq-num N     seq_num N (past the tail: the tail; below the first readable
                     record: that record)
  --to-timestamp MS  the first record whose timestamp is >= MS, in ms since the Unix
                     epoch (none: the tail)
  --to-tail          the tail: skip every record appended so far

The same manifest write bumps the group's epoch, as a member joining does: a member
running now is fenced, its next acknowledgement fails and it stops (sluice consume exits
1, "another member took over"), and the next member to join starts at the new
checkpoint. Unlike Kafka, the group need not be idle first.

As with Kafka's kafka-consumer-groups --reset-offsets, a GROUP that does not exist is
created at that checkpoint (a notice on stderr says so), so that a new group can start
anywhere: sluice consume then resumes there.

Prints the group as one JSON line, as sluice groups list does.`,
		Example: `  sluice groups reset orders billing --to-seq-num 0
  sluice groups reset orders billing --to-timestamp 1709481600000
  sluice groups reset orders new-reader --to-tail`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGroupsReset(cmd, g, f, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	addBasinFlag(cmd, &f.basin)
	fl.Uint64Var(&f.toSeqNum, "to-seq-num", 0, "move the checkpoint to this seq_num")
	fl.Uint64Var(&f.toTimestamp, "to-timestamp", 0, "move the checkpoint to the first record with a timestamp >= this (ms since the Unix epoch)")
	fl.BoolVar(&f.toTail, "to-tail", false, "move the checkpoint to the tail")
	targets := []string{"to-seq-num", "to-timestamp", "to-tail"}
	markExclusive(cmd, targets...)
	markCmdLineOnly(cmd, targets...) // a shared environment or config file must not reset groups
	return cmd
}

func runGroupsReset(cmd *cobra.Command, g *globals, f *groupsResetFlags, name, group string) error {
	ctx := cmd.Context()
	fl := cmd.Flags()
	var to consumer.Start
	n := 0
	if fl.Changed("to-seq-num") {
		to, n = consumer.AtSeqNum(f.toSeqNum), n+1
	}
	if fl.Changed("to-timestamp") {
		to, n = consumer.AtTimestamp(f.toTimestamp), n+1
	}
	if fl.Changed("to-tail") {
		if !f.toTail {
			return errors.New("--to-tail=false resets nothing: give --to-tail, --to-seq-num N or --to-timestamp MS")
		}
		to, n = consumer.AtTailOffset(0), n+1
	}
	if n != 1 {
		return fmt.Errorf("give exactly one of --to-seq-num N, --to-timestamp MS or --to-tail (got %d)", n)
	}
	if err := validateGroupName(group); err != nil {
		return err
	}
	if g.endpoint != "" {
		return groupsResetDaemon(ctx, g, f, name, group, to)
	}
	e, st, err := openStream(ctx, g, &f.basin, name)
	if err != nil {
		return err
	}
	defer e.close()
	info, created, err := consumer.ResetGroup(ctx, e.groupsConfig(st), group, to, time.Now())
	if err != nil && info.Group == "" {
		return e.readErr(name, err)
	}
	if created {
		fmt.Fprintf(os.Stderr, "sluice: group %q did not exist in %s: created it at checkpoint %d\n", group, e.where(name), info.Checkpoint)
	}
	if to.Kind == consumer.StartSeqNum && info.Checkpoint != f.toSeqNum {
		fmt.Fprintf(os.Stderr, "sluice: seq_num %d is outside the readable records: checkpoint set to %d\n", f.toSeqNum, info.Checkpoint)
	}
	if werr := newJSONOut(os.Stdout).write(groupLine(info)); werr != nil {
		return werr
	}
	if err != nil {
		return e.readErr(name, err) // reset done, lag unknown
	}
	return nil
}

func newGroupsDeleteCmd(g *globals) *cobra.Command {
	var basin string
	cmd := &cobra.Command{
		Use:   "delete STREAM GROUP",
		Short: "Delete a consumer group, fencing its running member",
		Long: `Delete consumer group GROUP of STREAM: its epoch and checkpoint leave the manifest.
A member running now is fenced: its next acknowledgement fails and it stops (sluice
consume exits 1). A member that joins GROUP afterwards starts a new group, from the head
(or with consume --start-at tail, from the tail). In queue mode the group no longer holds
records back.

A GROUP that does not exist is an error (exit 1).`,
		Example: `  sluice groups delete orders old-reader`,
		Args:    exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name, group := args[0], args[1]
			if g.endpoint != "" {
				return groupsDeleteDaemon(ctx, g, basin, name, group)
			}
			e, st, err := openStream(ctx, g, &basin, name)
			if err != nil {
				return err
			}
			defer e.close()
			err = consumer.DeleteGroup(ctx, e.groupsConfig(st), group)
			if errors.Is(err, consumer.ErrGroupNotFound) {
				return fmt.Errorf("%s has no consumer group %q (sluice groups list %s shows its groups)", e.where(name), group, shellQuote(name))
			}
			return e.readErr(name, err)
		},
	}
	addBasinFlag(cmd, &basin)
	return cmd
}

// validateGroupName applies consume's rule for group names.
func validateGroupName(group string) error {
	if group == "" || len(group) > consumer.MaxGroupNameLen {
		return fmt.Errorf("invalid group name %q: 1 to %d bytes", group, consumer.MaxGroupNameLen)
	}
	return nil
}
