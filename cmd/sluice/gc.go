package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

type gcFlags struct {
	once        bool
	gracePeriod time.Duration
	keepRecent  time.Duration
	maxList     int
	maxDeletes  int
}

func newGCCmd(g *globals) *cobra.Command {
	f := &gcFlags{}
	cmd := &cobra.Command{
		Use:   "gc --once",
		Short: "Run one garbage-collection and retention pass over every stream",
		Long: `Run one pass of the collector over every stream of the store (the root namespace and
every basin), print what it did as one JSON line per stream, and exit. The daemon
("sluice serve") runs the same passes every few minutes; this is for stores without a
daemon, cron jobs and checks.

Per stream, a pass:
  1. applies retention: drops from the manifest the entries below the trim point, older
     than the retention age, or (queue mode) acknowledged by every group, keeping entries
     younger than --keep-recent; where a sealed segment must stay because its newest
     records are younger than the age, raises the trim point past its older ones, so that
     they are no longer read (their objects go once older than --grace-period, like
     those of every entry below the trim point);
  2. lists every batch and segment object of the stream, in rounds of --max-list (a long
     listing logs its progress), and deletes those the manifest no longer references
     and that are older than --grace-period by the store's own clock (never by the local
     clock), at most --max-deletes per stream.
delete_on_empty needs a collector that has watched a stream stay empty, so --once never
deletes a stream.

Output per stream: {"stream":..,"basin":..,"entries_dropped":N,"trim_raised_to":N,
"listed":N,"referenced":N,"young":N,"foreign":N,"deleted":N,"delete_errors":N}: the trim
point retention set inside a segment (0 when it did not), the objects listed; of them, those the
manifest references, those too young to delete and those that are not batch or segment
objects (such as gc's own clock probe, gc-probe; never touched); then the deletes done and
failed (a failed delete is retried next pass, and counted then too; old unreferenced
objects past --max-deletes wait for the next pass). It exits 1 if any pass failed.`,
		Example: `  sluice gc --once
  sluice gc --once --store 's3://bucket/prefix?region=eu-west-1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !f.once {
				return errors.New("gc runs one pass and needs --once (the daemon, sluice serve, collects continuously)")
			}
			return runGC(cmd, g, f)
		},
	}
	def := gc.DefaultConfig()
	fl := cmd.Flags()
	fl.BoolVar(&f.once, "once", false, "run one pass over every stream and exit (required)")
	fl.Var(newDurationValue(&f.gracePeriod, def.GracePeriod), "grace-period", "delete unreferenced objects only when older than this (by the store's clock; "+gracePeriodHelp+")")
	fl.Var(newDurationValue(&f.keepRecent, def.KeepRecent), "keep-recent", "keep entries this long after their arrival even when retention covers them")
	fl.IntVar(&f.maxList, "max-list", def.MaxListPerPass, "objects listed per round (a pass lists every object of a stream, round after round)")
	fl.IntVar(&f.maxDeletes, "max-deletes", def.MaxDeletesPerPass, "most objects deleted per stream")
	return cmd
}

type gcReportJSON struct {
	Stream         string `json:"stream"`
	Basin          string `json:"basin,omitempty"`
	EntriesDropped int    `json:"entries_dropped"`
	TrimRaisedTo   uint64 `json:"trim_raised_to"`
	Listed         int    `json:"listed"`
	Referenced     int    `json:"referenced"`
	Young          int    `json:"young"`
	Foreign        int    `json:"foreign"`
	Deleted        int    `json:"deleted"`
	DeleteErrors   int    `json:"delete_errors"`
	Error          string `json:"error,omitempty"`
}

func runGC(cmd *cobra.Command, g *globals, f *gcFlags) error {
	ctx := cmd.Context()
	var errs []error
	warnGrace, err := checkGracePeriod("--grace-period", f.gracePeriod)
	if err != nil {
		errs = append(errs, err)
	}
	if f.keepRecent < 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --keep-recent: must not be negative", f.keepRecent))
	}
	if f.maxList <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %d for --max-list: must be positive", f.maxList))
	}
	if f.maxDeletes <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %d for --max-deletes: must be positive", f.maxDeletes))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	cfg := gc.DefaultConfig()
	cfg.GracePeriod = f.gracePeriod
	// The CLI warns of a grace period shorter than twice the producers' default deadline
	// (checkGracePeriod) rather than refusing it: it trusts the operator that the producers
	// on the store give up after half of it.
	cfg.CommitDeadline = f.gracePeriod / 2
	cfg.KeepRecent = f.keepRecent
	cfg.MaxListPerPass = f.maxList
	cfg.MaxDeletesPerPass = f.maxDeletes
	e, err := openLib(ctx, g, nil)
	if err != nil {
		return err
	}
	defer e.close()
	cfg.Logger = e.log
	if warnGrace != "" {
		e.log.Warn(warnGrace)
	}
	col, err := gc.NewCollector(e.store, cfg)
	if err != nil {
		return fmt.Errorf("invalid gc flags: %w", err)
	}
	streams, err := gcStreams(ctx, e.store)
	if err != nil {
		return fmt.Errorf("listing streams in store %s: %w%s", redactURL(e.g.store), err, storeHint(err))
	}
	out := newJSONOut(cmd.OutOrStdout())
	failed := 0
	for _, st := range streams {
		rep, err := col.FullPass(ctx, st)
		rj := gcReportJSON{
			Stream: st.Name(), Basin: st.Basin(), EntriesDropped: rep.EntriesDropped, TrimRaisedTo: rep.TrimRaisedTo, Listed: rep.Listed,
			Referenced: rep.Referenced, Young: rep.Young, Foreign: rep.Foreign, Deleted: rep.Deleted,
			DeleteErrors: rep.DeleteErrors,
		}
		if err != nil && !errors.Is(err, gc.ErrStreamNotFound) {
			rj.Error = err.Error()
			failed++
		}
		if err := out.write(rj); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	if failed > 0 {
		return fmt.Errorf("gc: %d of %d streams failed (see their \"error\")", failed, len(streams))
	}
	return nil
}

// gcStreams lists what the collector visits: every stream, then every deleted stream that
// left objects behind (catalog.GoneStreams), which a pass sweeps.
func gcStreams(ctx context.Context, store objectstore.Store) ([]stream.Stream, error) {
	all, err := catalog.AllStreams(ctx, store)
	if err != nil {
		return nil, err
	}
	gone, err := catalog.GoneStreams(ctx, store)
	if err != nil {
		return nil, err
	}
	return append(all, gone...), nil
}

// gracePeriodHelp is checkGracePeriod's rule, for the flags' help.
const gracePeriodHelp = "more than 0 and less than 48h; below 10m it warns"

// checkGracePeriod is the one rule for a grace period of the collector, gc's --grace-period
// and serve's --gc-grace-period alike. It refuses one that is not positive, or not under twice
// the producer table's expiry (a daemon's producers give up on an upload after half the grace
// period, which must stay under the expiry). It returns a warning for one shorter than twice
// the producers' default commit deadline (the CLI's, the library's): the collector may then
// delete an upload that such a producer, slowed down, still commits afterwards.
func checkGracePeriod(flag string, grace time.Duration) (warning string, err error) {
	if grace <= 0 || grace >= 2*manifest.ProducerExpiry {
		return "", fmt.Errorf("invalid value %v for %s: must be more than 0 and less than %v (producers give up on an upload after half of it, which must stay under the %v a silent producer keeps its row)", grace, flag, 2*manifest.ProducerExpiry, manifest.ProducerExpiry)
	}
	if d := producer.DefaultConfig().CommitDeadline; grace < 2*d {
		return fmt.Sprintf("%s %v is shorter than twice the producers' default commit deadline (%v): a producer with that default (sluice append, fence and trim; a program using the library with defaults; a daemon with a longer --gc-grace-period) may still commit an upload the collector deleted; use it only where every producer on the store gives up on an upload after less than half of it", flag, grace, d), nil
	}
	return "", nil
}
