package manifest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// Bounds that keep the manifest small (see the package doc).
const (
	// MaxRecentEntries: when a write would leave more entries than this in the manifest, the
	// oldest SealEntries are sealed into a level-0 segment first.
	MaxRecentEntries = 512
	// SealEntries is the number of entries per level-0 segment.
	SealEntries = 256
	// SegmentFanout: when the manifest holds more than this many references of one level,
	// the oldest SegmentFanout of them are sealed into one segment of the next level.
	SegmentFanout = 32
)

func segmentKey(manifestPath string, st *State, level uint8, firstSeq uint64) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("manifest: random segment key: %w", err)
	}
	return stream.SegmentKey(manifestPath, stream.SegmentName{Generation: [4]byte(st.Generation[:4]), FirstSeq: firstSeq, Level: level, Random: binary.BigEndian.Uint64(r[:])}), nil
}

// seal moves old entries of st into segment objects while st exceeds the bounds, writing each
// segment create-only under stream.SegmentPrefix(manifestPath). Write calls it; a segment written for
// a write that then loses its conditional put is unreferenced and left to the collector.
func seal(ctx context.Context, store objectstore.Store, manifestPath string, st *State) error {
	for len(st.Entries) > MaxRecentEntries {
		seg := &Segment{Level: 0, Generation: st.Generation, Entries: st.Entries[:SealEntries]}
		ref, err := putSegment(ctx, store, manifestPath, st, seg)
		if err != nil {
			return err
		}
		st.Entries = append([]Entry(nil), st.Entries[SealEntries:]...)
		st.Segments = append(st.Segments, ref)
	}
	for {
		lvl, from, ok := overfullLevel(st.Segments)
		if !ok {
			return nil
		}
		children := st.Segments[from : from+SegmentFanout]
		seg := &Segment{Level: lvl + 1, Generation: st.Generation, Refs: children}
		ref, err := putSegment(ctx, store, manifestPath, st, seg)
		if err != nil {
			return err
		}
		rest := append([]SegmentRef{ref}, st.Segments[from+SegmentFanout:]...)
		st.Segments = append(st.Segments[:from:from], rest...)
	}
}

// overfullLevel finds a level with more than SegmentFanout refs and the index of its oldest.
func overfullLevel(refs []SegmentRef) (level uint8, from int, ok bool) {
	for i := 0; i < len(refs); {
		j := i
		for j < len(refs) && refs[j].Level == refs[i].Level {
			j++
		}
		if j-i > SegmentFanout && refs[i].Level < 255 {
			return refs[i].Level, i, true
		}
		i = j
	}
	return 0, 0, false
}

func putSegment(ctx context.Context, store objectstore.Store, manifestPath string, st *State, seg *Segment) (SegmentRef, error) {
	ref := SegmentRef{Level: seg.Level}
	if seg.Level == 0 {
		first, last := &seg.Entries[0], &seg.Entries[len(seg.Entries)-1]
		ref.FirstSeq, ref.EndSeq, ref.MinTS, ref.MaxTS = first.FirstSeq, last.EndSeq(), first.MinTS, last.MaxTS
		ref.Entries = uint64(len(seg.Entries))
		for i := range seg.Entries {
			e := &seg.Entries[i]
			ref.MeteredBytes += e.MeteredBytes
			ref.ObjectBytes += e.ObjectBytes
			ref.MaxArrival = max(ref.MaxArrival, e.Arrival)
		}
	} else {
		first, last := &seg.Refs[0], &seg.Refs[len(seg.Refs)-1]
		ref.FirstSeq, ref.EndSeq, ref.MinTS, ref.MaxTS = first.FirstSeq, last.EndSeq, first.MinTS, last.MaxTS
		for i := range seg.Refs {
			r := &seg.Refs[i]
			ref.Entries += r.Entries
			ref.MeteredBytes += r.MeteredBytes
			ref.ObjectBytes += r.ObjectBytes
			ref.MaxArrival = max(ref.MaxArrival, r.MaxArrival)
		}
	}
	key, err := segmentKey(manifestPath, st, seg.Level, ref.FirstSeq)
	if err != nil {
		return ref, err
	}
	ref.Key = key
	if _, err := objectstore.PutBytes(ctx, store, key, seg.Encode(), objectstore.IfAbsent()); err != nil {
		// A fresh random key cannot exist: any error, including an unknown outcome, means we
		// do not know the object is there, so the manifest must not reference it.
		return ref, fmt.Errorf("manifest: write segment %s: %w", key, err)
	}
	return ref, nil
}

// LoadSegment reads and decodes a segment object.
func LoadSegment(ctx context.Context, store objectstore.Store, key string) (*Segment, error) {
	data, _, err := objectstore.ReadAll(ctx, store, key)
	if err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			// A referenced segment must exist: its absence is corruption of the stream.
			return nil, &CorruptError{Key: key, Reason: "referenced segment is missing: " + err.Error()}
		}
		return nil, fmt.Errorf("manifest: load segment %s: %w", key, err)
	}
	return DecodeSegment(key, data)
}

// LoadSegmentOf reads the segment a stream of generation gen references with ref, and checks
// that it is that reference's segment: its level and generation must match. With the
// decoder's rule that a segment's refs are one level below its own, levels then strictly
// decrease down a walk, so no walk can loop, whatever the store holds.
func LoadSegmentOf(ctx context.Context, store objectstore.Store, ref *SegmentRef, gen [16]byte) (*Segment, error) {
	seg, err := LoadSegment(ctx, store, ref.Key)
	if err != nil {
		return nil, err
	}
	if seg.Level != ref.Level || seg.Generation != gen {
		return nil, corrupt(ref.Key, "segment level %d / generation %x does not match its reference", seg.Level, seg.Generation)
	}
	return seg, nil
}

// Index looks entries up across a state's sealed segments and recent entries. Segments are
// immutable, so it caches the ones it loaded (up to 64); it is safe for concurrent use and
// may be reused with newer states of the same stream (WithState).
type Index struct {
	store objectstore.Store
	st    *State

	mu    *sync.Mutex
	cache map[string]*Segment
	order *[]string
}

// NewIndex returns an index over st whose segments are read from store.
func NewIndex(store objectstore.Store, st *State) *Index {
	return &Index{store: store, st: st, mu: &sync.Mutex{}, cache: map[string]*Segment{}, order: &[]string{}}
}

// WithState returns an index over a newer state sharing this index's segment cache.
func (x *Index) WithState(st *State) *Index {
	y := *x
	y.st = st
	return &y
}

// State is the state the index looks entries up in (do not modify it).
func (x *Index) State() *State { return x.st }

const indexCacheSize = 64

func (x *Index) segment(ctx context.Context, ref *SegmentRef) (*Segment, error) {
	x.mu.Lock()
	seg, ok := x.cache[ref.Key]
	x.mu.Unlock()
	if ok {
		return seg, nil
	}
	seg, err := LoadSegmentOf(ctx, x.store, ref, x.st.Generation)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	if _, ok := x.cache[ref.Key]; !ok {
		if len(*x.order) >= indexCacheSize {
			delete(x.cache, (*x.order)[0])
			*x.order = (*x.order)[1:]
		}
		x.cache[ref.Key] = seg
		*x.order = append(*x.order, ref.Key)
	}
	x.mu.Unlock()
	return seg, nil
}

var errStop = errors.New("stop")

// walk visits, in seq_num order, every entry under refs and then entries, skipping whole
// segments for which skipRef is true and entries for which skipEntry is true. fn may return
// errStop to end the walk.
func (x *Index) walk(ctx context.Context, refs []SegmentRef, entries []Entry, skipRef func(*SegmentRef) bool, skipEntry func(*Entry) bool, fn func(*Entry) error) error {
	for i := range refs {
		r := &refs[i]
		if skipRef(r) {
			continue
		}
		seg, err := x.segment(ctx, r)
		if err != nil {
			return err
		}
		if err := x.walk(ctx, seg.Refs, seg.Entries, skipRef, skipEntry, fn); err != nil {
			return err
		}
	}
	for i := range entries {
		if e := &entries[i]; !skipEntry(e) {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// Walk calls fn, in seq_num order, for every entry holding records at or after fromSeq
// (EndSeq > fromSeq), entries without committed records included only when they lie beyond
// fromSeq. It stops at fn's first error and returns it.
func (x *Index) Walk(ctx context.Context, fromSeq uint64, fn func(*Entry) error) error {
	return x.walk(ctx, x.st.Segments, x.st.Entries,
		func(r *SegmentRef) bool { return r.EndSeq <= fromSeq },
		func(e *Entry) bool { return e.EndSeq() <= fromSeq },
		fn)
}

// FindSeq returns the entry holding seq, or the first entry with records after seq (when seq
// was dropped by retention). ok is false when no entry holds a record at or after seq.
func (x *Index) FindSeq(ctx context.Context, seq uint64) (e Entry, ok bool, err error) {
	err = x.walk(ctx, x.st.Segments, x.st.Entries,
		func(r *SegmentRef) bool { return r.EndSeq <= seq },
		func(e *Entry) bool { return e.EndSeq() <= seq || e.Records == 0 },
		func(found *Entry) error { e, ok = *found, true; return errStop })
	if errors.Is(err, errStop) {
		err = nil
	}
	return e, ok, err
}

// FindTimestamp returns the first entry holding a record whose timestamp is at or after ts.
// Timestamps are non-decreasing in seq_num order, so the records before it are all earlier.
func (x *Index) FindTimestamp(ctx context.Context, ts uint64) (e Entry, ok bool, err error) {
	err = x.walk(ctx, x.st.Segments, x.st.Entries,
		func(r *SegmentRef) bool { return r.MaxTS < ts || r.EndSeq == r.FirstSeq },
		func(e *Entry) bool { return e.MaxTS < ts || e.Records == 0 },
		func(found *Entry) error { e, ok = *found, true; return errStop })
	if errors.Is(err, errStop) {
		err = nil
	}
	return e, ok, err
}

// FindBatch returns the entry a producer committed under a batch number, searching recent
// entries first, then the segments, newest first.
func (x *Index) FindBatch(ctx context.Context, producerID string, batchNum uint64) (Entry, bool, error) {
	for i := len(x.st.Entries) - 1; i >= 0; i-- {
		if e := &x.st.Entries[i]; e.ProducerID == producerID && e.BatchNum == batchNum {
			return *e, true, nil
		}
	}
	var found Entry
	var ok bool
	for i := len(x.st.Segments) - 1; i >= 0 && !ok; i-- {
		err := x.walk(ctx, x.st.Segments[i:i+1], nil,
			func(*SegmentRef) bool { return false },
			func(e *Entry) bool { return e.ProducerID != producerID || e.BatchNum != batchNum },
			// The newest match of the segment: a producer id reused by a later run may have
			// the same batch number in it twice.
			func(e *Entry) error { found, ok = *e, true; return nil })
		if err != nil && !errors.Is(err, errStop) {
			return Entry{}, false, err
		}
	}
	return found, ok, nil
}
