package manifest

import (
	"testing"
)

// sealFirst replaces the first entry of s by a level-0 segment reference covering it, as Seal
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

// Retention by age works on whole sealed segments (a known limit, in README): a segment whose
// older entries expired but whose newest has not stays, and its expired records stay
// readable, where the same entries unsealed leave one by one.
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

	// The first two entries in one segment, as Seal would group them.
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
