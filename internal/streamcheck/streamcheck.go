// Package streamcheck is the tests' own reader of a stream, independent of package
// consumer: it walks the manifest's entries (across segments), decodes each batch object,
// skips rejected appends, numbers records from each entry's first seq_num and replays
// timestamps with the entry's clock, checking as it goes that positions are contiguous and
// that every entry holds what it says. The producer's tests and the simulation (package
// sim) check what they wrote against what it reads.
package streamcheck

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Record is a record as the reader sees it.
type Record struct {
	Seq, TS uint64
	Body    string
	Command string // the command of a command record, else ""
}

// Read reads the stream whose manifest is at path. It returns its records, the manifest's
// state, and every key the manifest references (segments, recursively, and the batch objects
// of the entries that hold a readable record). An entry wholly below the readable start holds
// none, and the collector may have deleted its object: such an entry's records are returned
// while its object is there, and skipped once it is gone. A gap or overlap in positions, an
// entry whose object disagrees with it, or records that do not end at the tail is an error.
func Read(ctx context.Context, store objectstore.Store, path string) ([]Record, *manifest.State, map[string]bool, error) {
	snap, err := manifest.Open(store, path).Load(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load manifest: %w", err)
	}
	st := snap.State
	refs := map[string]bool{}
	var walkRefs func([]manifest.SegmentRef) error
	walkRefs = func(rs []manifest.SegmentRef) error {
		for _, r := range rs {
			refs[r.Key] = true
			seg, err := manifest.LoadSegment(ctx, store, r.Key)
			if err != nil {
				return fmt.Errorf("segment %s: %w", r.Key, err)
			}
			if err := walkRefs(seg.Refs); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walkRefs(st.Segments); err != nil {
		return nil, st, refs, err
	}
	var out []Record
	next := st.FirstSeq()
	readable := st.ReadableStart()
	err = manifest.NewIndex(store, st).Walk(ctx, 0, func(e *manifest.Entry) error {
		if e.FirstSeq != next {
			return fmt.Errorf("entry %s starts at %d, want %d (positions not contiguous)", e.Key, e.FirstSeq, next)
		}
		below := e.EndSeq() <= readable
		if !below {
			refs[e.Key] = true
		}
		data, _, err := objectstore.ReadAll(ctx, store, e.Key)
		if below && errors.Is(err, objectstore.ErrNotFound) {
			next = e.EndSeq() // collected: nothing readable was in it
			return nil
		}
		if err != nil {
			return fmt.Errorf("entry %s [%d, %d): %w", e.Key, e.FirstSeq, e.EndSeq(), err)
		}
		b, err := batchfmt.Decode(data)
		if err != nil {
			return fmt.Errorf("entry %s: %w", e.Key, err)
		}
		if b.NumAppends() != int(e.Appends) {
			return fmt.Errorf("entry %s: %d appends in the object, %d in the entry", e.Key, b.NumAppends(), e.Appends)
		}
		clock := e.Clock()
		it := b.Iter(e.IsRejected)
		for it.Next() {
			r := it.Record()
			out = append(out, Record{Seq: next, TS: clock.Next(r.HasTimestamp, r.Timestamp), Body: string(r.Body), Command: r.Command()})
			next++
		}
		if it.Err() != nil {
			return fmt.Errorf("entry %s: %w", e.Key, it.Err())
		}
		if next != e.EndSeq() {
			return fmt.Errorf("entry %s: read up to %d, entry ends at %d", e.Key, next, e.EndSeq())
		}
		return nil
	})
	if err != nil {
		return nil, st, refs, err
	}
	if next != st.Tail.SeqNum {
		return nil, st, refs, fmt.Errorf("records end at %d, tail is %d", next, st.Tail.SeqNum)
	}
	return out, st, refs, nil
}
