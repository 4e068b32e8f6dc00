package gc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Config configures a Collector. Start from DefaultConfig.
type Config struct {
	// Interval between the rounds of Run. Default 5 minutes (the seeds' gc_interval).
	Interval time.Duration
	// GracePeriod is the minimum age, by the store's clock, of an unreferenced object before
	// it is deleted. Default 10 minutes (the seeds' gc_grace_period). Producers must give up
	// on uploads older than half of it (producer.Config.CommitDeadline).
	GracePeriod time.Duration
	// MaxListPerPass bounds the objects one pass lists per stream (both prefixes together).
	// Default 10000. The next pass continues where this one stopped. FullPass lists in
	// rounds of this many until it reaches the end.
	MaxListPerPass int
	// MaxDeletesPerPass bounds the objects one pass deletes per stream. Default 1000.
	MaxDeletesPerPass int
	// KeepRecent keeps entries in the manifest for this long after their arrival even when
	// retention already covers them, so that a producer that must rebuild its
	// acknowledgements after a write with an unknown outcome still finds its entry. Records
	// below the trim point are unreadable regardless. Default 1 minute; 0 is legal.
	KeepRecent time.Duration
	// ProbeReuse: a probe of the store's clock is reused by the passes over other streams for
	// this long (by the local monotonic clock) instead of writing a probe per stream and pass.
	// An older probe only makes objects look younger than they are, so reuse is never unsafe;
	// it delays deletions by at most this long. Default 1 minute; 0 probes on every pass.
	ProbeReuse time.Duration
	// Now is the clock of retention (age, delete_on_empty). Default time.Now. Object ages
	// never use it: they use the store's clock.
	Now func() time.Time
	// Backoff between retries of manifest writes (retention).
	Backoff manifest.Backoff
	// OnPass, if set, is called after every pass of Run, with its report and error.
	OnPass func(Report, error)
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the collector's metrics (sluice_gc_*). Default nil: not registered.
	Registerer prometheus.Registerer
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Interval:          5 * time.Minute,
		GracePeriod:       10 * time.Minute,
		MaxListPerPass:    10000,
		MaxDeletesPerPass: 1000,
		KeepRecent:        time.Minute,
		ProbeReuse:        time.Minute,
		Now:               time.Now,
		Backoff:           manifest.DefaultBackoff(),
		Logger:            slog.New(slog.DiscardHandler),
	}
}

// Sentinel errors.
var (
	// ErrInvalidConfig is matched by every configuration problem.
	ErrInvalidConfig = errors.New("gc: invalid config")
	// ErrStreamNotFound: the stream has no manifest; nothing is collected.
	ErrStreamNotFound = errors.New("gc: stream not found")
	// ErrNoStoreClock: the store reported no modification time for the probe object, so
	// object ages cannot be judged; nothing is deleted.
	ErrNoStoreClock = errors.New("gc: store reports no modification times")
)

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Interval <= 0 {
		bad("interval %v must be > 0", c.Interval)
	}
	if c.GracePeriod <= 0 {
		bad("grace period %v must be > 0", c.GracePeriod)
	}
	if c.MaxListPerPass < 1 {
		bad("max list per pass %d must be >= 1", c.MaxListPerPass)
	}
	if c.MaxDeletesPerPass < 1 {
		bad("max deletes per pass %d must be >= 1", c.MaxDeletesPerPass)
	}
	if c.KeepRecent < 0 {
		bad("keep recent %v must not be negative", c.KeepRecent)
	}
	if c.ProbeReuse < 0 {
		bad("probe reuse %v must not be negative", c.ProbeReuse)
	}
	if c.Now == nil {
		bad("clock is nil")
	}
	if err := c.Backoff.Validate(); err != nil {
		bad("%v", err)
	}
	if c.Logger == nil {
		bad("logger is nil (use slog.New(slog.DiscardHandler))")
	}
	return errors.Join(errs...)
}

// Stream names one stream: its manifest and the prefix of its batch objects. The prefix must
// be the stream's alone: a pass deletes the batch objects under it that the stream's manifest
// does not reference (once older than the grace period), so a prefix shared with another
// stream loses that stream's records.
type Stream struct {
	ManifestPath string
	DataPrefix   string
}

// Report says what one pass did.
type Report struct {
	Stream
	EntriesDropped int    // entries retention removed from the manifest
	TrimRaisedTo   uint64 // the trim point retention raised past expired records of a sealed segment it keeps (0: not raised)
	Listed         int    // objects listed
	Referenced     int    // listed objects the manifest references
	Young          int    // unreferenced objects younger than the grace period (kept)
	Foreign        int    // listed keys that are neither batch nor segment objects, such as ProbeKey, or the manifest when it lies under the data prefix (never touched)
	Deleted        int    // objects deleted
	DeleteErrors   int    // deletes that failed (retried next pass)
	Wrapped        bool   // a listing reached the end of its prefix and starts over next pass
	StreamDeleted  bool   // delete_on_empty removed the stream
}

// ProbeKey is the object a pass writes to read the store's clock: under the data prefix,
// named so that it is never taken for a batch object.
func ProbeKey(dataPrefix string) string { return dataPrefix + "/gc-probe" }

var (
	batchName   = regexp.MustCompile(`^[0-9a-f]{28,}$`)
	segmentName = regexp.MustCompile(`^[0-9a-f]{8}-[0-9]{20}-[0-9]{1,3}-[0-9a-f]{16}$`)
)

// IsBatchKey reports whether key names a batch object of the stream: the producer writes
// them as dataPrefix + "/" + 12 hex digits of Unix ms + 16 random hex digits. The collector
// deletes nothing else under the data prefix.
func IsBatchKey(dataPrefix, key string) bool {
	name, ok := strings.CutPrefix(key, dataPrefix+"/")
	return ok && batchName.MatchString(name)
}

// IsSegmentKey reports whether key names a segment object of the manifest at manifestPath
// (see manifest.SegmentPrefix).
func IsSegmentKey(manifestPath, key string) bool {
	name, ok := strings.CutPrefix(key, manifest.SegmentPrefix(manifestPath))
	return ok && segmentName.MatchString(name)
}

// Collector collects the streams of one store. It remembers, per stream, where its listings
// stopped, which deletes failed (retried first next pass), the keys under immutable segments,
// and since when the stream has been empty. It is safe for concurrent use; passes over the
// same stream are serialised.
type Collector struct {
	store objectstore.Store
	cfg   Config
	m     *metrics

	mu      sync.Mutex
	streams map[Stream]*streamState

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
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("gc: register metrics: %w", err)
	}
	return &Collector{store: store, cfg: cfg, m: m, streams: map[Stream]*streamState{}}, nil
}

// Pass runs one full pass (Collector.FullPass: every object listed, in rounds of
// MaxListPerPass) over one stream with a fresh collector, which has no memory of earlier
// passes: a bounded pass would list the same first objects on every call, and
// delete_on_empty never fires. The daemon uses a Collector or Run instead.
func Pass(ctx context.Context, store objectstore.Store, manifestPath, dataPrefix string, cfg Config) (Report, error) {
	c, err := NewCollector(store, cfg)
	if err != nil {
		return Report{}, err
	}
	return c.FullPass(ctx, manifestPath, dataPrefix)
}

func (c *Collector) state(s Stream) *streamState {
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
func (c *Collector) Forget(manifestPath, dataPrefix string) {
	c.forget(Stream{manifestPath, dataPrefix})
}

// Pass runs one pass over the stream (manifestPath, dataPrefix); see the package doc for the
// steps. Failed deletes are logged, counted and retried next pass; they do not fail the pass.
// Anything that leaves the set of referenced objects uncertain (a manifest or segment that
// cannot be read) fails the pass before anything is deleted.
func (c *Collector) Pass(ctx context.Context, manifestPath, dataPrefix string) (rep Report, err error) {
	return c.pass(ctx, manifestPath, dataPrefix, false)
}

// FullPass is Pass with both listings run from the start of their prefixes to the end, in
// rounds of MaxListPerPass objects (a long listing logs its progress at Info), so that one
// call examines every batch and segment object of the stream. Deletes stay within
// MaxDeletesPerPass in all. It is for runs that are not repeated soon (sluice gc --once, a
// cron job), where Pass would examine the same first MaxListPerPass objects each time. The
// next Pass lists from the start again.
func (c *Collector) FullPass(ctx context.Context, manifestPath, dataPrefix string) (rep Report, err error) {
	return c.pass(ctx, manifestPath, dataPrefix, true)
}

func (c *Collector) pass(ctx context.Context, manifestPath, dataPrefix string, full bool) (rep Report, err error) {
	s := Stream{manifestPath, dataPrefix}
	rep.Stream = s
	defer func() {
		c.m.passes.Inc()
		if err != nil {
			c.m.passErrors.Inc()
		}
	}()
	if err := objectstore.ValidateKey(manifestPath); err != nil {
		return rep, fmt.Errorf("%w: manifest path: %v", ErrInvalidConfig, err)
	}
	if err := objectstore.ValidateKey(dataPrefix + "/x"); dataPrefix == "" || err != nil {
		return rep, fmt.Errorf("%w: data prefix %q", ErrInvalidConfig, dataPrefix)
	}
	st := c.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	log := c.cfg.Logger.With("manifest", manifestPath)

	// No manifest, or the tombstone a delete_on_empty left (see manifest.Create): the stream
	// is gone, and what it left behind is swept.
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
	retained, err := manifest.Update(ctx, c.store, manifestPath, func(ms *manifest.State) error {
		rep.EntriesDropped = ms.ApplyRetention(nowMs, keepMs)
		if rep.EntriesDropped == 0 {
			return manifest.ErrNoChange
		}
		return nil
	}, manifest.WithBackoff(c.cfg.Backoff))
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
	c.raiseTrimInSegments(ctx, manifestPath, retained.State, nowMs, log, &rep)

	// 2. The store's clock: write a probe and read its modification time. It happens before
	// the manifest is read again, so every object old enough to delete was either
	// committed before that read or can never be committed (its producer gave up on it).
	storeNow, err := c.storeClock(ctx, dataPrefix)
	if err != nil {
		return rep, err
	}
	cutoff := storeNow.Add(-c.cfg.GracePeriod)

	// 3. What the manifest references now, segments included.
	snap, err := manifest.Load(ctx, c.store, manifestPath)
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			return rep, fmt.Errorf("%w: %s", ErrStreamNotFound, manifestPath)
		}
		return rep, fmt.Errorf("gc: load %s: %w", manifestPath, err)
	}
	refs, err := c.referenced(ctx, st, snap.State)
	if err != nil {
		return rep, fmt.Errorf("gc: references of %s (nothing deleted): %w", manifestPath, err)
	}

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
func (c *Collector) collect(ctx context.Context, s Stream, st *streamState, log *slog.Logger, rep *Report, refs map[string]struct{}, cutoff time.Time, full bool) (complete bool, err error) {
	manifestPath, dataPrefix := s.ManifestPath, s.DataPrefix
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
	segPrefix := manifest.SegmentPrefix(manifestPath)
	var wrappedData, wrappedSeg bool
	sweepData := func() (err error) {
		if wrappedData {
			return nil // done in an earlier round of this pass
		}
		wrappedData, err = c.sweep(ctx, dataPrefix+"/", &st.dataAfter, &listBudget, rep, func(o objectstore.ObjectInfo) bool {
			if strings.HasPrefix(o.Key, segPrefix) {
				return false // the segment sweep's, counted there
			}
			if !IsBatchKey(dataPrefix, o.Key) {
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
			if !IsSegmentKey(manifestPath, o.Key) {
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
func (c *Collector) sweepGone(ctx context.Context, s Stream, st *streamState, log *slog.Logger, rep *Report, full bool) error {
	defer func() {
		if err := c.store.Delete(ctx, ProbeKey(s.DataPrefix)); err != nil && !errors.Is(err, objectstore.ErrNotFound) {
			log.Warn("deleted stream: probe left behind", "key", ProbeKey(s.DataPrefix), "err", err)
		}
	}()
	storeNow, err := c.storeClock(ctx, s.DataPrefix)
	if err != nil {
		return err
	}
	cutoff := storeNow.Add(-c.cfg.GracePeriod)
	if info, err := c.store.Head(ctx, s.ManifestPath); err == nil && info.Size > 0 {
		return nil // created again: the next pass is a normal one
	} else if err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return fmt.Errorf("gc: head manifest %s: %w", s.ManifestPath, err)
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

// storeClock returns the store's clock: a recent probe's (see Config.ProbeReuse) or a new one.
func (c *Collector) storeClock(ctx context.Context, dataPrefix string) (time.Time, error) {
	c.probeMu.Lock()
	if !c.probeTime.IsZero() && time.Since(c.probeLocal) < c.cfg.ProbeReuse {
		t := c.probeTime
		c.probeMu.Unlock()
		return t, nil
	}
	c.probeMu.Unlock()
	local := time.Now()
	t, err := c.probe(ctx, dataPrefix)
	if err != nil {
		return t, err
	}
	c.probeMu.Lock()
	if t.After(c.probeTime) {
		c.probeTime, c.probeLocal = t, local
	}
	c.probeMu.Unlock()
	return t, nil
}

func (c *Collector) probe(ctx context.Context, dataPrefix string) (time.Time, error) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	key := ProbeKey(dataPrefix)
	info, err := objectstore.PutBytes(ctx, c.store, key, []byte(hex.EncodeToString(nonce[:])), objectstore.Unconditional())
	if err != nil {
		return time.Time{}, fmt.Errorf("gc: write clock probe %s: %w", key, err)
	}
	if info.ModTime.IsZero() {
		if info, err = c.store.Head(ctx, key); err != nil {
			return time.Time{}, fmt.Errorf("gc: read clock probe %s: %w", key, err)
		}
	}
	if info.ModTime.IsZero() {
		return time.Time{}, fmt.Errorf("%w: probe %s", ErrNoStoreClock, key)
	}
	return info.ModTime, nil
}

// raiseTrimInSegments is retention inside the sealed segments: a segment leaves the manifest
// only whole, once its newest entry is past the age, so the trim point rises past the run of
// entries past the age at the start of the oldest segment kept (manifest.Index.ExpiredPrefix,
// found on ms, the state retention just wrote or read), and their records stop being readable
// (and their objects, no longer referenced, go once old: see referenced).
// The segments are read before the conditional write that raises it, once, so that producers
// committing meanwhile cannot make every attempt repeat a long walk; the run stays valid for
// newer states of the same generation and retention config (entries leave the manifest only
// from its start, segments never change, and what is past the age at nowMs stays so). A
// failure leaves the trim point for a later pass, and the pass goes on.
func (c *Collector) raiseTrimInSegments(ctx context.Context, manifestPath string, ms *manifest.State, nowMs uint64, log *slog.Logger, rep *Report) {
	point, err := manifest.NewIndex(c.store, ms).ExpiredPrefix(ctx, nowMs)
	if err != nil {
		log.Warn("retention: looking into the sealed segments failed; records past the age in them stay readable until a later pass", "err", err)
		return
	}
	if point <= ms.TrimPoint {
		return
	}
	gen, retention := ms.Generation, ms.Config.Retention
	var raised uint64
	_, err = manifest.Update(ctx, c.store, manifestPath, func(ms *manifest.State) error {
		raised = 0
		p := min(point, ms.Tail.SeqNum)
		if p <= ms.TrimPoint || ms.Generation != gen || ms.Config.Retention != retention {
			return manifest.ErrNoChange
		}
		ms.TrimPoint, raised = p, p
		return nil
	}, manifest.WithBackoff(c.cfg.Backoff))
	if err != nil {
		log.Warn("retention: raising the trim point past records past the age failed; a later pass tries again", "err", err)
		return
	}
	if raised > 0 {
		rep.TrimRaisedTo = raised
		log.Info("retention raised the trim point past records older than the age in a sealed segment", "trim_point", raised)
	}
}

// segKey is a key beneath a segment: an entry's batch object, with the entry's end seq_num,
// or a child segment (end math.MaxUint64: always referenced while its parent is).
type segKey struct {
	key string
	end uint64
}

// referenced returns every key the state references: the segments, everything under them
// (read once per segment and cached: segments are immutable), and the batch objects of the
// entries that hold a readable record. An entry wholly below the readable start (the trim
// point, raised by trim commands and by retention inside a sealed segment it keeps) holds
// none: readers never fetch its object, and the trim point never falls within a generation,
// so its object is not referenced and goes once old, although the entry itself may stay in
// the manifest (in a segment that is not wholly expired, or for KeepRecent).
func (c *Collector) referenced(ctx context.Context, st *streamState, ms *manifest.State) (map[string]struct{}, error) {
	readable := ms.ReadableStart()
	refs := map[string]struct{}{}
	for i := range ms.Entries {
		if e := &ms.Entries[i]; e.EndSeq() > readable {
			refs[e.Key] = struct{}{}
		}
	}
	live := map[string]bool{}
	var under func(ref *manifest.SegmentRef) ([]segKey, error)
	under = func(ref *manifest.SegmentRef) ([]segKey, error) {
		live[ref.Key] = true
		if keys, ok := st.segKeys[ref.Key]; ok {
			for _, k := range keys {
				if k.end == math.MaxUint64 {
					live[k.key] = true
				}
			}
			return keys, nil
		}
		seg, err := manifest.LoadSegmentOf(ctx, c.store, ref, ms.Generation)
		if err != nil {
			return nil, err
		}
		var keys []segKey
		for i := range seg.Entries {
			keys = append(keys, segKey{seg.Entries[i].Key, seg.Entries[i].EndSeq()})
		}
		for i := range seg.Refs {
			keys = append(keys, segKey{seg.Refs[i].Key, math.MaxUint64})
			sub, err := under(&seg.Refs[i])
			if err != nil {
				return nil, err
			}
			keys = append(keys, sub...)
		}
		st.segKeys[ref.Key] = keys
		return keys, nil
	}
	for i := range ms.Segments {
		r := &ms.Segments[i]
		refs[r.Key] = struct{}{}
		keys, err := under(r)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if k.end > readable {
				refs[k.key] = struct{}{}
			}
		}
	}
	for k := range st.segKeys {
		if !live[k] {
			delete(st.segKeys, k)
		}
	}
	return refs, nil
}

// IsSegmentKeyAny reports whether key looks like a segment object of any manifest.
func IsSegmentKeyAny(key string) bool {
	i := strings.LastIndex(key, ".seg/")
	return i >= 0 && segmentName.MatchString(key[i+len(".seg/"):])
}

// deleteOnEmpty deletes the stream when its config asks for it (delete_on_empty.min_age_secs
// > 0), it has held no readable record for that long, and no batch or segment object is left
// under its prefixes (the earlier passes collected them). The manifest is first replaced,
// conditionally on the version this pass read, by an empty object: a producer racing with the
// deletion then fails its write (version changed) and its reload (an empty manifest does not
// decode), readers see the stream as gone, and only then is the manifest deleted.
func (c *Collector) deleteOnEmpty(ctx context.Context, s Stream, st *streamState, snap *manifest.Snapshot, now time.Time, rep *Report) error {
	ms := snap.State
	minAge := time.Duration(math.MaxInt64) // about 292 years: longer ages never come
	if secs := ms.Config.DeleteOnEmpty.MinAgeSecs; secs < uint64(math.MaxInt64/int64(time.Second)) {
		minAge = time.Duration(secs) * time.Second
	}
	if minAge <= 0 || !ms.IsEmpty() {
		st.emptySince = time.Time{}
		return nil
	}
	if st.emptySince.IsZero() || st.emptyTail != ms.Tail.SeqNum || st.emptyGen != ms.Generation {
		st.emptySince, st.emptyTail, st.emptyGen = now, ms.Tail.SeqNum, ms.Generation
	}
	since := st.emptySince
	last := ms.CreatedMs
	for _, p := range ms.Producers {
		last = max(last, p.LastSeenMs)
	}
	if t := time.UnixMilli(int64(last)); t.After(since) {
		since = t
	}
	if now.Sub(since) < minAge {
		return nil
	}
	left, err := c.anyObjectLeft(ctx, s)
	if err != nil || left {
		return err
	}
	if _, err := objectstore.PutBytes(ctx, c.store, s.ManifestPath, nil, objectstore.IfMatch(snap.Version)); err != nil {
		if errors.Is(err, objectstore.ErrPreconditionFailed) {
			return nil // the stream changed: not empty any more, or someone else deleting it
		}
		return fmt.Errorf("gc: delete_on_empty: empty manifest %s: %w", s.ManifestPath, err)
	}
	c.cfg.Logger.Info("delete_on_empty: deleting the stream", "manifest", s.ManifestPath, "empty_since", since)
	c.finishDelete(ctx, s, rep)
	return nil
}

// anyObjectLeft reports whether any batch or segment object remains (within the list budget;
// an unfinished scan counts as "left").
func (c *Collector) anyObjectLeft(ctx context.Context, s Stream) (bool, error) {
	budget := c.cfg.MaxListPerPass
	for _, prefix := range []string{s.DataPrefix + "/", manifest.SegmentPrefix(s.ManifestPath)} {
		after := ""
		for {
			if budget <= 0 {
				return true, nil
			}
			page, err := c.store.List(ctx, prefix, after, min(budget, 1000))
			if err != nil {
				return true, fmt.Errorf("gc: list %s: %w", prefix, err)
			}
			for _, o := range page.Objects {
				budget--
				if IsBatchKey(s.DataPrefix, o.Key) || IsSegmentKey(s.ManifestPath, o.Key) {
					return true, nil
				}
			}
			if page.NextStartAfter == "" {
				break
			}
			after = page.NextStartAfter
		}
	}
	return false, nil
}

// finishDelete completes a deletion after the manifest became a tombstone: it removes the
// probe. The tombstone stays (see manifest.Create): deleting the key would race with a
// re-creation of the stream, since the store has no conditional delete.
func (c *Collector) finishDelete(ctx context.Context, s Stream, rep *Report) {
	if err := c.store.Delete(ctx, ProbeKey(s.DataPrefix)); err != nil {
		c.cfg.Logger.Warn("delete_on_empty: probe left behind (removed next pass)", "key", ProbeKey(s.DataPrefix), "err", err)
	}
	rep.StreamDeleted = true
	c.m.streamsDeleted.Inc()
	c.forget(s)
}

// forget drops the collector's memory of a stream.
func (c *Collector) forget(s Stream) {
	c.mu.Lock()
	delete(c.streams, s)
	c.mu.Unlock()
}
