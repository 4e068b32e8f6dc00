package manifest

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// 100,000 entries, no consumer acking: the manifest stays under its bound, and every entry
// can still be found by seq_num, timestamp and batch across the sealed segments.
func TestManifestBoundWith100kEntries(t *testing.T) {
	const total, perWrite = 100_000, 250
	// The bound: MaxRecentEntries entries of this test's shape plus SegmentFanout refs per
	// level (at most 4 levels for 100k entries), plus the fixed part.
	const bound = 128 << 10
	ctx := context.Background()
	store := objectstore.NewMemStore()
	snap, err := Open(store, "ingest/manifest").Create(ctx, DefaultConfig(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	largest := 0
	num := uint64(0)
	for w := 0; w < total/perWrite; w++ {
		st := snap.State.Clone()
		for range perWrite {
			num++
			p := "producer-0123456789abcdef"
			b := &Batch{Key: objectKey(num), ObjectBytes: 4096, ProducerID: p, BatchNum: num, ArrivalMs: 1_700_000_000_000 + num,
				Appends: []*batchfmt.AppendInput{{Records: recs(3, 1_700_000_000_000+num)}}}
			if _, err := st.Apply(b); err != nil {
				t.Fatal(err)
			}
		}
		res, err := Open(store, "ingest/manifest").Write(ctx, st, snap.Version)
		if err != nil {
			t.Fatal(err)
		}
		snap = &res.Snapshot
		size := len(snap.State.Encode())
		largest = max(largest, size)
		if size > bound {
			t.Fatalf("after %d entries the manifest is %d bytes, over %d", num, size, bound)
		}
	}
	st := snap.State
	t.Logf("largest manifest %d bytes; %d recent entries, %d segment refs", largest, len(st.Entries), len(st.Segments))
	if st.Tail.SeqNum != 3*total || len(st.Entries) > MaxRecentEntries {
		t.Fatalf("tail %d, %d entries", st.Tail.SeqNum, len(st.Entries))
	}
	if len(st.Segments) > SegmentFanout*4 || st.Segments[0].Level == 0 {
		t.Fatalf("refs not merged into levels: %d refs, oldest of level %d", len(st.Segments), st.Segments[0].Level)
	}
	keyShape := regexp.MustCompile(`^ingest/manifest\.seg/[0-9a-f]{8}-[0-9]{20}-[0-9]{1,3}-[0-9a-f]{16}$`)
	for _, r := range st.Segments {
		if !keyShape.MatchString(r.Key) {
			t.Fatalf("segment key %q does not have the documented shape", r.Key)
		}
	}
	// Reload: the stored manifest decodes and lookups span segments.
	snap, err = Open(store, "ingest/manifest").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(store, snap.State)
	for _, n := range []uint64{1, 2, 257, 8193, 50_000, 99_999, 100_000} {
		seq := (n - 1) * 3
		e, ok, err := x.FindSeq(ctx, seq+1)
		if err != nil || !ok || e.Key != objectKey(n) || e.FirstSeq != seq {
			t.Fatalf("FindSeq(%d): %v %v %+v", seq+1, ok, err, e)
		}
		e, ok, err = x.FindTimestamp(ctx, 1_700_000_000_000+n)
		if err != nil || !ok || e.BatchNum != n {
			t.Fatalf("FindTimestamp(%d): %v %v %+v", n, ok, err, e)
		}
		e, ok, err = x.FindBatch(ctx, "producer-0123456789abcdef", n)
		if err != nil || !ok || e.Key != objectKey(n) {
			t.Fatalf("FindBatch(%d): %v %v %+v", n, ok, err, e)
		}
	}
	// Walk from the middle visits every later entry once, contiguously.
	next := uint64(150_000)
	count := 0
	err = x.Walk(ctx, next, func(e *Entry) error {
		if e.FirstSeq != next {
			t.Fatalf("walk: entry at %d, want %d", e.FirstSeq, next)
		}
		next = e.EndSeq()
		count++
		return nil
	})
	if err != nil || next != 3*total || count != total/2 {
		t.Fatalf("walk: %v, ended at %d after %d entries", err, next, count)
	}
	// Dropping below a point removes whole segments and entries only.
	st = snap.State.Clone()
	st.TrimPoint = 150_000
	dropped := st.Prune(0)
	if st.FirstSeq() > 150_000 || dropped == 0 {
		t.Fatalf("prune dropped %d, first seq %d", dropped, st.FirstSeq())
	}
	if _, err := Decode("m", st.Encode()); err != nil {
		t.Fatalf("pruned state does not decode: %v", err)
	}
}

func objectKey(n uint64) string {
	return "ingest/0000018c2f3a" + string(rune('a'+n%26)) + "-" + strconv.FormatUint(n, 10)
}
