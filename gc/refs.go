package gc

import (
	"context"
	"log/slog"
	"math"

	"github.com/sluice-dev/sluice/manifest"
)

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
func (c *Collector) raiseTrimInSegments(ctx context.Context, mf *manifest.Handle, ms *manifest.State, nowMs uint64, log *slog.Logger, rep *Report) {
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
	_, err = mf.Update(ctx, func(ms *manifest.State) error {
		raised = 0
		p := min(point, ms.Tail.SeqNum)
		if p <= ms.TrimPoint || ms.Generation != gen || ms.Config.Retention != retention {
			return manifest.ErrNoChange
		}
		ms.TrimPoint, raised = p, p
		return nil
	})
	if err != nil {
		log.Warn("retention: raising the trim point past records past the age failed; a later pass tries again", "err", err)
		return
	}
	if raised > 0 {
		rep.TrimRaisedTo = raised
		log.Info("retention raised the trim point past records older than the age in a sealed segment", "trim_point", raised)
	}
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

// segKey is a key beneath a segment: an entry's batch object, with the entry's end seq_num,
// or a child segment (end math.MaxUint64: always referenced while its parent is).
type segKey struct {
	key string
	end uint64
}
