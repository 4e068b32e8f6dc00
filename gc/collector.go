package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// Collector collects the streams of one store. It remembers, per stream, where its listings
// stopped, which deletes failed (retried first next pass), the keys under immutable segments,
// and since when the stream has been empty. It is safe for concurrent use; passes over the
// same stream are serialised.
type Collector struct {
	store objectstore.Store
	cfg   Config
	m     *metrics

	mu      sync.Mutex
	streams map[stream.Stream]*streamState

	journals *journalRound // the round of Run gathering journal references (guarded by mu)

	probeMu    sync.Mutex
	probeTime  time.Time // the store's clock at the latest probe
	probeLocal time.Time // the local clock just before that probe was written
}

type streamState struct {
	mu         sync.Mutex
	dataAfter  string
	segAfter   string
	segFirst   bool // the segment sweep lists first this pass (they alternate)
	retry      map[string]struct{}
	segKeys    map[string][]segKey // segment key -> every key beneath it (entries and child segments)
	emptySince time.Time
	emptyTail  uint64
	emptyGen   [16]byte
}

// NewCollector validates cfg and returns a collector for store.
func NewCollector(store objectstore.Store, cfg Config) (*Collector, error) {
	var errs []error
	if store == nil {
		errs = append(errs, fmt.Errorf("%w: store is nil", ErrInvalidConfig))
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("gc: register metrics: %w", err)
	}
	return &Collector{store: store, cfg: cfg, m: m, streams: map[stream.Stream]*streamState{}}, nil
}

// Pass runs one full pass (Collector.FullPass: every object listed, in rounds of
// MaxListPerPass) over one stream with a fresh collector, which has no memory of earlier
// passes: a bounded pass would list the same first objects on every call, and
// delete_on_empty never fires. The daemon uses a Collector or Run instead.
func Pass(ctx context.Context, store objectstore.Store, s stream.Stream, cfg Config) (Report, error) {
	c, err := NewCollector(store, cfg)
	if err != nil {
		return Report{}, err
	}
	return c.FullPass(ctx, s)
}

func (c *Collector) state(s stream.Stream) *streamState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.streams[s]
	if !ok {
		st = &streamState{retry: map[string]struct{}{}, segKeys: map[string][]segKey{}}
		c.streams[s] = st
	}
	return st
}

// Forget drops what the collector remembers about a stream (for streams that are gone).
func (c *Collector) Forget(s stream.Stream) {
	c.forget(s)
}

// Pass runs one pass over the stream s; see the package doc for the
// steps. Failed deletes are logged, counted and retried next pass; they do not fail the pass.
// Anything that leaves the set of referenced objects uncertain (a manifest or segment that
// cannot be read) fails the pass before anything is deleted.
func (c *Collector) Pass(ctx context.Context, s stream.Stream) (rep Report, err error) {
	return c.pass(ctx, s, false)
}

// FullPass is Pass with both listings run from the start of their prefixes to the end, in
// rounds of MaxListPerPass objects (a long listing logs its progress at Info), so that one
// call examines every batch and segment object of the stream. Deletes stay within
// MaxDeletesPerPass in all. It is for runs that are not repeated soon (sluice gc --once, a
// cron job), where Pass would examine the same first MaxListPerPass objects each time. The
// next Pass lists from the start again.
func (c *Collector) FullPass(ctx context.Context, s stream.Stream) (rep Report, err error) {
	return c.pass(ctx, s, true)
}

func (c *Collector) pass(ctx context.Context, s stream.Stream, full bool) (rep Report, err error) {
	rep.Stream = s
	defer func() {
		c.m.passes.Inc()
		if err != nil {
			c.m.passErrors.Inc()
		}
	}()
	if s.IsZero() {
		return rep, fmt.Errorf("%w: the zero stream.Stream names no stream", ErrInvalidConfig)
	}
	manifestPath := s.ManifestKey()
	st := c.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	log := c.cfg.Logger.With("manifest", manifestPath)

	// No manifest, or the tombstone a delete_on_empty left (see manifest.Handle.Create): the
	// stream is gone, and what it left behind is swept.
	head, err := c.store.Head(ctx, manifestPath)
	if gone := errors.Is(err, objectstore.ErrNotFound); gone || (err == nil && head.Size == 0) {
		if err := c.sweepGone(ctx, s, st, log, &rep, full); err != nil {
			return rep, err
		}
		return rep, fmt.Errorf("%w: %s (deleted)", ErrStreamNotFound, manifestPath)
	}
	if err != nil {
		return rep, fmt.Errorf("gc: head manifest %s: %w", manifestPath, err)
	}

	// 1. Retention: drop entries from the manifest.
	now := c.cfg.Now()
	nowMs := uint64(max(now.UnixMilli(), 0))
	keepMs := uint64(c.cfg.KeepRecent / time.Millisecond)
	mf := manifest.Open(c.store, manifestPath, manifest.WithBackoff(c.cfg.Backoff))
	retained, err := mf.Update(ctx, func(ms *manifest.State) error {
		rep.EntriesDropped = ms.ApplyRetention(nowMs, keepMs)
		if rep.EntriesDropped == 0 {
			return manifest.ErrNoChange
		}
		return nil
	})
	if err != nil {
		rep.EntriesDropped = 0 // nothing known to be applied
		if errors.Is(err, manifest.ErrNotExist) {
			return rep, fmt.Errorf("%w: %s", ErrStreamNotFound, manifestPath)
		}
		return rep, fmt.Errorf("gc: retention of %s: %w", manifestPath, err)
	}
	if rep.EntriesDropped > 0 {
		c.m.entriesDropped.Add(float64(rep.EntriesDropped))
		log.Info("retention dropped entries", "entries", rep.EntriesDropped)
	}
	c.raiseTrimInSegments(ctx, mf, retained.State, nowMs, log, &rep)

	// 2. The store's clock: write a probe and read its modification time. It happens before
	// the manifest is read again, so every object old enough to delete was either
	// committed before that read or can never be committed (its producer gave up on it).
	storeNow, err := c.storeClock(ctx, s)
	if err != nil {
		return rep, err
	}
	cutoff := storeNow.Add(-c.cfg.GracePeriod)

	// 3. What the manifest references now, segments included, and the windows of the
	// journal it names (their entries name producers' batch objects too).
	snap, view, err := mf.LoadView(ctx)
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			return rep, fmt.Errorf("%w: %s", ErrStreamNotFound, manifestPath)
		}
		return rep, fmt.Errorf("gc: load %s: %w", manifestPath, err)
	}
	refs, err := c.referenced(ctx, st, view)
	if err != nil {
		return rep, fmt.Errorf("gc: references of %s (nothing deleted): %w", manifestPath, err)
	}
	c.journalRoundNow().note(snap.State, refs)

	if _, err := c.collect(ctx, s, st, log, &rep, refs, cutoff, full); err != nil {
		return rep, err
	}

	// 6. delete_on_empty.
	if err := c.deleteOnEmpty(ctx, s, st, snap, now, &rep); err != nil {
		return rep, err
	}
	log.Debug("gc pass", "listed", rep.Listed, "deleted", rep.Deleted, "young", rep.Young, "referenced", rep.Referenced,
		"delete_errors", rep.DeleteErrors)
	return rep, nil
}

// collect deletes the stream's batch and segment objects that refs does not hold and that are
// older than cutoff: first the deletes that failed last time (steps 4 and 5 of a pass), then
// both prefixes from where the last pass stopped, within the pass's budgets. complete says
// whether both listings reached their end.
func (c *Collector) collect(ctx context.Context, s stream.Stream, st *streamState, log *slog.Logger, rep *Report, refs map[string]struct{}, cutoff time.Time, full bool) (complete bool, err error) {
	dataPrefix := s.DataPrefix()
	deletable := func(o objectstore.ObjectInfo) bool {
		if _, ok := refs[o.Key]; ok {
			rep.Referenced++
			return false
		}
		if o.ModTime.IsZero() || !o.ModTime.Before(cutoff) {
			rep.Young++
			return false
		}
		return true
	}
	budget := c.cfg.MaxDeletesPerPass
	del := func(key string) {
		if budget <= 0 {
			return
		}
		budget--
		if err := c.store.Delete(ctx, key); err != nil {
			rep.DeleteErrors++
			c.m.deleteErrors.Inc()
			st.retry[key] = struct{}{}
			log.Warn("delete failed; retrying next pass", "key", key, "err", err)
			return
		}
		delete(st.retry, key)
		rep.Deleted++
		c.m.deleted.Inc()
	}

	// 4. Retry the deletes that failed last time (still unreferenced and old, re-checked).
	for key := range st.retry {
		info, err := c.store.Head(ctx, key)
		if errors.Is(err, objectstore.ErrNotFound) {
			delete(st.retry, key)
			continue
		}
		if err != nil {
			log.Warn("retrying a failed delete: head failed; next pass", "key", key, "err", err)
			continue
		}
		info.Key = key // judge the key this loop holds, whatever Head filled in
		if deletable(info) {
			del(key)
		}
	}

	// 5. List both prefixes from where the last pass stopped: one round; or (full) from
	// their start, in rounds until each listing has reached its end.
	if full {
		st.dataAfter, st.segAfter = "", ""
	}
	listBudget := c.cfg.MaxListPerPass
	segPrefix := s.SegmentPrefix()
	var wrappedData, wrappedSeg bool
	sweepData := func() (err error) {
		if wrappedData {
			return nil // done in an earlier round of this pass
		}
		wrappedData, err = c.sweep(ctx, dataPrefix+"/", &st.dataAfter, &listBudget, rep, func(o objectstore.ObjectInfo) bool {
			if strings.HasPrefix(o.Key, segPrefix) {
				return false // the segment sweep's, counted there
			}
			if _, ok := s.ParseBatchKey(o.Key); !ok {
				rep.Foreign++ // the manifest and the clock probe among them
				return true
			}
			if deletable(o) {
				del(o.Key)
			}
			return true
		})
		return err
	}
	sweepSeg := func() (err error) {
		if wrappedSeg {
			return nil
		}
		wrappedSeg, err = c.sweep(ctx, segPrefix, &st.segAfter, &listBudget, rep, func(o objectstore.ObjectInfo) bool {
			if _, ok := s.ParseSegmentKey(o.Key); !ok {
				rep.Foreign++
				return true
			}
			if deletable(o) {
				del(o.Key)
			}
			return true
		})
		return err
	}
	// The two share the budget; they take turns to go first, so that neither is starved when
	// the other's listing fills the budget to the end, pass after pass.
	for round := 1; ; round++ {
		first, second := sweepData, sweepSeg
		if st.segFirst {
			first, second = sweepSeg, sweepData
		}
		st.segFirst = !st.segFirst
		if err := first(); err != nil {
			return false, err
		}
		if err := second(); err != nil {
			return false, err
		}
		if !full || (wrappedData && wrappedSeg) {
			break
		}
		log.Info("gc: listing the stream's objects", "round", round, "listed", rep.Listed, "deleted", rep.Deleted)
		listBudget = c.cfg.MaxListPerPass
	}
	rep.Wrapped = wrappedData || wrappedSeg
	return wrappedData && wrappedSeg, nil
}

// sweepGone collects what a deleted stream left behind (catalog.GoneStreams finds such
// streams): a deletion cut short, or an upload that landed after it. Nothing references these
// objects, as the stream has no manifest; each batch or segment object older than the grace
// period by the store's clock goes. A stream created again under the name meanwhile has a
// manifest and only younger objects: the sweep stops when it sees the manifest, and would
// spare those objects anyway. The clock's probe, left under the prefix, goes at the end.
func (c *Collector) sweepGone(ctx context.Context, s stream.Stream, st *streamState, log *slog.Logger, rep *Report, full bool) error {
	defer func() {
		if err := c.store.Delete(ctx, s.ProbeKey()); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
			log.Warn("deleted stream: probe left behind", "key", s.ProbeKey(), "err", err)
		}
	}()
	storeNow, err := c.storeClock(ctx, s)
	if err != nil {
		return err
	}
	cutoff := storeNow.Add(-c.cfg.GracePeriod)
	if info, err := c.store.Head(ctx, s.ManifestKey()); err == nil && info.Size > 0 {
		return nil // created again: the next pass is a normal one
	} else if err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return fmt.Errorf("gc: head manifest %s: %w", s.ManifestKey(), err)
	}
	complete, err := c.collect(ctx, s, st, log, rep, nil, cutoff, full)
	if err != nil {
		return err
	}
	if rep.Deleted > 0 {
		log.Info("deleted stream: swept what it left behind", "deleted", rep.Deleted, "young", rep.Young)
	}
	if complete && rep.Young == 0 && rep.DeleteErrors == 0 {
		c.forget(s)
	}
	return nil
}

// sweep lists prefix after *after, within *budget objects, calling fn for each; an object
// counts as listed in rep when fn says it is this sweep's. It reports whether the listing
// reached the end (the cursor is then reset for the next pass).
func (c *Collector) sweep(ctx context.Context, prefix string, after *string, budget *int, rep *Report, fn func(objectstore.ObjectInfo) bool) (bool, error) {
	for *budget > 0 {
		page, err := c.store.List(ctx, prefix, *after, min(*budget, 1000))
		if err != nil {
			c.m.listErrors.Inc()
			return false, fmt.Errorf("gc: list %s: %w", prefix, err)
		}
		for _, o := range page.Objects {
			*budget--
			if fn(o) {
				rep.Listed++
				c.m.listed.Inc()
			}
			*after = o.Key
		}
		if page.NextStartAfter == "" {
			*after = ""
			return true, nil
		}
		*after = page.NextStartAfter // a page may end past its last object, or hold none
	}
	return false, nil
}
