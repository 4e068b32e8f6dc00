package manifest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// retState builds a state with the given config from batches of sizes[i] records arriving at
// arrivals[i] ms.
func retState(t *testing.T, cfg Config, sizes []int, arrivals []uint64) *State {
	t.Helper()
	s, err := NewState(cfg, time.UnixMilli(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		rs := make([]batchfmt.Record, n)
		for j := range rs {
			rs[j].Body = []byte("x")
		}
		b := &Batch{Key: fmt.Sprintf("ingest/ret-%d", i), ObjectBytes: 1, ProducerID: "p", BatchNum: uint64(i + 1),
			ArrivalMs: arrivals[i], Appends: []*batchfmt.AppendInput{{Records: rs}}}
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestApplyRetention(t *testing.T) {
	sizes := []int{3, 2, 4, 1} // seq_nums [0,3) [3,5) [5,9) [9,10)
	arrivals := []uint64{1000, 2000, 3000, 4000}

	t.Run("trim", func(t *testing.T) {
		s := retState(t, DefaultConfig(), sizes, arrivals)
		s.TrimPoint = 6
		if got := s.ReadableStart(); got != 6 {
			t.Fatalf("readable start %d", got)
		}
		if n := s.ApplyRetention(10_000, 0); n != 2 || s.FirstSeq() != 5 {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
		if s.IsEmpty() {
			t.Fatal("empty")
		}
	})
	t.Run("trim to the tail drops the last entry", func(t *testing.T) {
		s := retState(t, DefaultConfig(), sizes, arrivals)
		s.TrimPoint = 10
		if n := s.ApplyRetention(10_000, 0); n != 4 || len(s.Entries) != 0 || s.FirstSeq() != 10 || !s.IsEmpty() {
			t.Fatalf("dropped %d, %d entries left, first seq %d", n, len(s.Entries), s.FirstSeq())
		}
		if s.Tail.SeqNum != 10 {
			t.Fatalf("tail moved: %+v", s.Tail)
		}
	})
	t.Run("keep recent", func(t *testing.T) {
		s := retState(t, DefaultConfig(), sizes, arrivals)
		s.TrimPoint = 10
		// Entries that arrived less than 2500 ms before now=5000 stay, and so do all after them.
		if n := s.ApplyRetention(5000, 2500); n != 2 || s.FirstSeq() != 5 || s.ReadableStart() != 10 || !s.IsEmpty() {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
	})
	t.Run("age", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Retention = Retention{AgeSecs: 2}
		s := retState(t, cfg, sizes, arrivals)
		if n := s.ApplyRetention(3000, 0); n != 0 {
			t.Fatalf("nothing is older than 2 s at 3 s, dropped %d", n)
		}
		if n := s.ApplyRetention(4001, 0); n != 2 || s.FirstSeq() != 5 {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
	})
	t.Run("queue", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.QueueMode = true
		s := retState(t, cfg, sizes, arrivals)
		if n := s.ApplyRetention(10_000, 0); n != 0 {
			t.Fatalf("queue without groups dropped %d", n)
		}
		s.OpenGroup("a")
		s.OpenGroup("b")
		if _, err := s.SetCheckpoint("a", 1, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetCheckpoint("b", 1, 4); err != nil {
			t.Fatal(err)
		}
		if n := s.ApplyRetention(10_000, 0); n != 1 || s.FirstSeq() != 3 {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
		if _, err := s.SetCheckpoint("b", 1, 10); err != nil {
			t.Fatal(err)
		}
		if n := s.ApplyRetention(10_000, 0); n != 3 || len(s.Entries) != 0 || !s.IsEmpty() {
			t.Fatalf("dropped %d, %d entries left", n, len(s.Entries))
		}
	})
}

// sealFirst replaces the first entry of s by a level-0 segment reference covering it, as seal
// would (no object is written: the retention primitives only look at the reference).
func sealFirst(s *State) {
	e := s.Entries[0]
	s.Segments = []SegmentRef{{Key: "ingest/manifest.seg/x", FirstSeq: e.FirstSeq, EndSeq: e.EndSeq(),
		MinTS: e.MinTS, MaxTS: e.MaxTS, Entries: 1, MeteredBytes: e.MeteredBytes, ObjectBytes: e.ObjectBytes,
		MaxArrival: e.Arrival}}
	s.Entries = append([]Entry(nil), s.Entries[1:]...)
}

// Arrival times are not monotonic in seq_num order (they are the producers' clocks at seal
// time, and a batch sealed earlier can commit later). DropPoint's age rule stops at the first
// segment or entry that is still young: a young segment protects the entries after it as a
// young entry does (once, the entry loop ran on past a young segment and raised the drop
// point past it, and ApplyRetention dropped records well inside the retention age). The
// outcome must not depend on whether the entry was sealed yet.
func TestRetentionAgeYoungSegmentProtectsEntries(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Retention = Retention{AgeSecs: 10}
	const now = 30_000
	// [0,3) arrived at 25 s (5 s ago: inside the 10 s retention); [3,5) at 5 s (25 s ago).
	sizes := []int{3, 2}
	arrivals := []uint64{25_000, 5_000}

	unsealed := retState(t, cfg, sizes, arrivals)
	if n := unsealed.ApplyRetention(now, 0); n != 0 {
		t.Fatalf("control (no segments): dropped %d entries, want 0", n)
	}

	sealed := retState(t, cfg, sizes, arrivals)
	sealFirst(sealed)
	n := sealed.ApplyRetention(now, 0)
	if n != 0 || len(sealed.Segments) != 1 {
		t.Fatalf("same stream with its first entry sealed: dropped %d entries (segments left %d, first seq %d); "+
			"records that arrived 5 s ago were dropped under a 10 s retention", n, len(sealed.Segments), sealed.FirstSeq())
	}
}

// Retention.AgeSecs is any uint64 > 0 (Config.Validate, and the S2 API passes the JSON value
// through): an age of ~585 million years, whose milliseconds do not fit 64 bits, must never
// expire (it once wrapped to 384 ms and dropped everything at once).
func TestRetentionAgeOverflow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Retention = Retention{AgeSecs: 18446744073709552} // ceil(2^64/1000) seconds
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config refused: %v", err) // refusing it would be a fine fix
	}
	const now = 1_800_000_000_000
	s := retState(t, cfg, []int{3, 2}, []uint64{now - 2_000, now - 1_000})
	if n := s.ApplyRetention(now, 0); n != 0 {
		t.Fatalf("retention of %d s dropped %d entries that arrived 1-2 s ago (first seq now %d)",
			cfg.Retention.AgeSecs, n, s.FirstSeq())
	}
}

// ApplyRetention drops sealed segments only whole: a segment whose older entries expired but
// whose newest has not stays (with them readable, until package gc raises the trim point past
// them: ExpiredPrefix, TestExpiredPrefix), where the same entries unsealed leave one by one.
func TestRetentionAgeKeepsAPartlyExpiredSegment(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Retention = Retention{AgeSecs: 10}
	const now = 30_000
	// [0,3) arrived at 5 s (25 s ago: expired); [3,5) at 25 s (5 s ago: young); [5,6) at 26 s.
	sizes := []int{3, 2, 1}
	arrivals := []uint64{5_000, 25_000, 26_000}

	unsealed := retState(t, cfg, sizes, arrivals)
	if n := unsealed.ApplyRetention(now, 0); n != 1 || unsealed.ReadableStart() != 3 {
		t.Fatalf("unsealed: dropped %d entries, readable from %d; want 1 and 3", n, unsealed.ReadableStart())
	}

	// The first two entries in one segment, as seal would group them.
	sealed := retState(t, cfg, sizes, arrivals)
	e0, e1 := sealed.Entries[0], sealed.Entries[1]
	sealed.Segments = []SegmentRef{{Key: "ingest/manifest.seg/x", FirstSeq: e0.FirstSeq, EndSeq: e1.EndSeq(),
		MinTS: e0.MinTS, MaxTS: e1.MaxTS, Entries: 2, MeteredBytes: e0.MeteredBytes + e1.MeteredBytes,
		ObjectBytes: e0.ObjectBytes + e1.ObjectBytes, MaxArrival: max(e0.Arrival, e1.Arrival)}}
	sealed.Entries = append([]Entry(nil), sealed.Entries[2:]...)
	if n := sealed.ApplyRetention(now, 0); n != 0 || len(sealed.Segments) != 1 || sealed.ReadableStart() != 0 {
		t.Fatalf("sealed: dropped %d entries, %d segments left, readable from %d; want 0, 1 and 0 (the whole segment stays)",
			n, len(sealed.Segments), sealed.ReadableStart())
	}
	// Once its newest entry expires, the segment goes whole.
	if n := sealed.ApplyRetention(35_500, 0); n != 2 || len(sealed.Segments) != 0 || sealed.ReadableStart() != 5 {
		t.Fatalf("sealed, later: dropped %d entries, %d segments left, readable from %d; want 2, 0 and 5",
			n, len(sealed.Segments), sealed.ReadableStart())
	}
}

// ExpiredPrefix finds, inside the oldest segment kept for its age (here a second-level one,
// read through the first-level ones below it), where the run of expired entries ends; an
// entry still young ends the run, however old the ones after it.
func TestExpiredPrefix(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	cfg := DefaultConfig()
	cfg.Retention = Retention{AgeSecs: 100}
	const n = 34*SealEntries + 1 // seals 33 first-level segments, then 32 of them into one
	sizes := make([]int, n)
	arrivals := make([]uint64, n)
	for i := range n {
		sizes[i] = 1
		arrivals[i] = uint64(i+1) * 1000 // entry i (seq_num i) arrives at i+1 s
	}
	build := func(mod func(st *State)) *State {
		st := retState(t, cfg, sizes, arrivals)
		if mod != nil {
			mod(st)
		}
		if err := seal(ctx, store, "ingest/manifest", st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := build(nil)
	if len(st.Segments) != 2 || st.Segments[0].Level != 1 || st.Segments[0].EndSeq != 32*SealEntries {
		t.Fatalf("setup: %d segment refs, the first %+v; want 2, the first of level 1 over [0, %d)", len(st.Segments), st.Segments[0], 32*SealEntries)
	}
	prefix := func(st *State, nowMs uint64) uint64 {
		t.Helper()
		p, err := NewIndex(store, st).ExpiredPrefix(ctx, nowMs)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// At 5100.5 s, entries arrived up to 5000 s are past the 100 s age: seq_nums 0-4999.
	if got := prefix(st, 5_100_500); got != 5000 {
		t.Fatalf("expired prefix at 5100.5 s = %d, want 5000", got)
	}
	// Not past the trim point: nothing new below it.
	st.TrimPoint = 6000
	if got := prefix(st, 5_100_500); got != 0 {
		t.Fatalf("with the trim point at 6000: %d, want 0", got)
	}
	st.TrimPoint = 4000
	if got := prefix(st, 5_100_500); got != 5000 {
		t.Fatalf("with the trim point at 4000: %d, want 5000", got)
	}
	// A young entry (a producer's clock behind) ends the run.
	late := build(func(st *State) { st.Entries[3000].Arrival = 9_000_000 })
	if got := prefix(late, 5_100_500); got != 3000 {
		t.Fatalf("with entry 3000 young: %d, want 3000", got)
	}
	// The trim point past the first segment kept (which a late arrival keeps): the run is
	// looked for from the trim point, in the segments after it.
	late.TrimPoint = 32*SealEntries + 8
	if got := prefix(late, (32*SealEntries+108)*1000+100_500); got != 32*SealEntries+108 {
		t.Fatalf("with the trim point past the first segment kept: %d, want %d", got, 32*SealEntries+108)
	}
	// The first segment wholly expired: the run is looked for in the next one kept.
	if got := prefix(st, (32*SealEntries+100)*1000+100_500); got != 32*SealEntries+100 {
		t.Fatalf("past the first segment: %d, want %d", got, 32*SealEntries+100)
	}
	// Nothing expired, or infinite retention: 0.
	if got := prefix(st, 50_000); got != 0 {
		t.Fatalf("at 50 s: %d, want 0", got)
	}
	inf := retState(t, DefaultConfig(), sizes[:SealEntries*3], arrivals[:SealEntries*3])
	if err := seal(ctx, store, "ingest/manifest", inf); err != nil {
		t.Fatal(err)
	}
	if len(inf.Segments) == 0 {
		t.Fatal("setup: nothing sealed")
	}
	if got := prefix(inf, 1<<60); got != 0 {
		t.Fatalf("infinite retention: %d, want 0", got)
	}
}
