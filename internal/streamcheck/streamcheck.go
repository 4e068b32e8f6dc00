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
	"io"

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

// Read reads the stream whose manifest is at path, with the commits of the journal the
// manifest names folded in (manifest.Handle.LoadView). It returns its records, that state, and every key the manifest references (segments, recursively, and the batch objects
// of the entries that hold a readable record). An entry wholly below the readable start holds
// none, and the collector may have deleted its object: such an entry's records are returned
// while its object is there, and skipped once it is gone. A gap or overlap in positions, an
// entry whose object disagrees with it, or records that do not end at the tail is an error.
func Read(ctx context.Context, store objectstore.Store, path string) ([]Record, *manifest.State, map[string]bool, error) {
	_, st, err := manifest.Open(store, path).LoadView(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load manifest: %w", err)
	}
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
		data, err := readEntry(ctx, store, e)
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

// readEntry reads an entry's batch object: the whole object, or its byte range of a journal
// window (a ranged entry).
func readEntry(ctx context.Context, store objectstore.Store, e *manifest.Entry) ([]byte, error) {
	if !e.Ranged() {
		data, _, err := objectstore.ReadAll(ctx, store, e.Key)
		return data, err
	}
	obj, err := store.Get(ctx, e.Key, objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: int64(e.Offset), Length: int64(e.Length)}})
	if err != nil {
		return nil, err
	}
	defer obj.Body.Close()
	data, err := io.ReadAll(obj.Body)
	if err != nil {
		return nil, err
	}
	if uint64(len(data)) != e.Length {
		return nil, fmt.Errorf("ranged entry %s [%d, +%d): read %d bytes", e.Key, e.Offset, e.Length, len(data))
	}
	return data, nil
}
