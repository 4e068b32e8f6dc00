package gc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// deleteOnEmpty deletes the stream when its config asks for it (delete_on_empty.min_age_secs
// > 0), it has held no readable record for that long, and no batch or segment object is left
// under its prefixes (the earlier passes collected them). The manifest is first replaced,
// conditionally on the version this pass read, by an empty object: a producer racing with the
// deletion then fails its write (version changed) and its reload (an empty manifest does not
// decode), readers see the stream as gone, and only then is the manifest deleted.
func (c *Collector) deleteOnEmpty(ctx context.Context, s stream.Stream, st *streamState, snap *manifest.Snapshot, now time.Time, rep *Report) error {
	ms := snap.State
	minAge := time.Duration(math.MaxInt64) // about 292 years: longer ages never come
	if secs := ms.Config.DeleteOnEmpty.MinAgeSecs; secs < uint64(math.MaxInt64/int64(time.Second)) {
		minAge = time.Duration(secs) * time.Second
	}
	if minAge <= 0 || !ms.IsEmpty() || ms.Journal != nil {
		// A manifest that names a journal may have commits there that it does not show: the
		// stream is not empty until its committer gives the journal up.
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
	if _, err := objectstore.PutBytes(ctx, c.store, s.ManifestKey(), nil, objectstore.IfMatch(snap.Version)); err != nil {
		if errors.Is(err, objectstore.ErrPreconditionFailed) {
			return nil // the stream changed: not empty any more, or someone else deleting it
		}
		return fmt.Errorf("gc: delete_on_empty: empty manifest %s: %w", s.ManifestKey(), err)
	}
	c.cfg.Logger.Info("delete_on_empty: deleting the stream", "manifest", s.ManifestKey(), "empty_since", since)
	c.finishDelete(ctx, s, rep)
	return nil
}

// anyObjectLeft reports whether any batch or segment object remains (within the list budget;
// an unfinished scan counts as "left").
func (c *Collector) anyObjectLeft(ctx context.Context, s stream.Stream) (bool, error) {
	budget := c.cfg.MaxListPerPass
	for _, prefix := range []string{s.DataPrefix() + "/", s.SegmentPrefix()} {
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
				if k := s.Classify(o.Key); k == stream.KeyBatch || k == stream.KeySegment {
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
// probe. The tombstone stays (see manifest.Handle.Create): deleting the key would race with a
// re-creation of the stream, since the store has no conditional delete.
func (c *Collector) finishDelete(ctx context.Context, s stream.Stream, rep *Report) {
	if err := c.store.Delete(ctx, s.ProbeKey()); err != nil {
		c.cfg.Logger.Warn("delete_on_empty: probe left behind (removed next pass)", "key", s.ProbeKey(), "err", err)
	}
	rep.StreamDeleted = true
	c.m.streamsDeleted.Inc()
	c.forget(s)
}

// forget drops the collector's memory of a stream.
func (c *Collector) forget(s stream.Stream) {
	c.mu.Lock()
	delete(c.streams, s)
	c.mu.Unlock()
}
