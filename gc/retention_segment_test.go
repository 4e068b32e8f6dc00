package gc

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Retention by age inside a sealed segment: the manifest keeps a segment whole while any of
// its entries is young, but its records past the age stop being readable at the next pass
// (the trim point rises past them), and their objects go once older than the grace period,
// while the segment stays until it has expired whole.
func TestRetentionByAgeInsideASegment(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	scfg := manifest.DefaultConfig()
	scfg.Retention = manifest.Retention{AgeSecs: 100}
	s := newStream(t, fs, scfg, nil)
	const n = 600 // past 512 entries, the oldest 256 are sealed into a segment
	for i := range n {
		s.now.Store(t0.Add(time.Duration(i) * time.Second).UnixMilli()) // record i arrives at i s
		s.object(1)
	}
	st := load(t, fs)
	if len(st.Segments) != 1 || st.Segments[0].FirstSeq != 0 || st.Segments[0].EndSeq != 256 {
		t.Fatalf("setup: segments %+v, want one over [0, 256)", st.Segments)
	}
	now := t0
	c, err := NewCollector(fs, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	pass := func(at time.Duration) Report {
		t.Helper()
		now = t0.Add(at)
		rep, err := c.Pass(ctx, ingest)
		if err != nil {
			t.Fatalf("pass at %v: %v", at, err)
		}
		return rep
	}

	// At 300.5 s, records 0-200 are past the 100 s age; the segment's newest (255 s) is not.
	rep := pass(300500 * time.Millisecond)
	st = load(t, fs)
	if rep.TrimRaisedTo != 201 || st.TrimPoint != 201 || rep.EntriesDropped != 0 || len(st.Segments) != 1 {
		t.Fatalf("at 300.5 s: trim raised to %d (manifest %d), %d entries dropped, %d segments; want 201, 201, 0, 1",
			rep.TrimRaisedTo, st.TrimPoint, rep.EntriesDropped, len(st.Segments))
	}
	if recs := checkIntact(t, fs); len(recs) != n-201 || recs[0].SeqNum != 201 {
		t.Fatalf("at 300.5 s: read %d records from %d, want %d from 201", len(recs), recs[0].SeqNum, n-201)
	}
	// Nothing moves while no further record expires, and the objects below the trim point are
	// not yet older than the grace period by the store's clock.
	if rep := pass(300900 * time.Millisecond); rep.TrimRaisedTo != 0 || rep.EntriesDropped != 0 || rep.Deleted != 0 {
		t.Fatalf("at 300.9 s: %+v, want no change", rep)
	}
	// Once they are, the objects of the entries below the trim point go, while the segment,
	// which still holds younger entries, stays, and reads from the trim point are unaffected.
	fs.advance(11 * time.Minute)
	rep = pass(301 * time.Second)
	st = load(t, fs)
	if rep.Deleted != 201 || len(st.Segments) != 1 || st.TrimPoint != 201 || rep.EntriesDropped != 0 {
		t.Fatalf("at 301 s, objects old: %d deleted, %d segments, trim point %d, %d entries dropped; want 201, 1, 201, 0",
			rep.Deleted, len(st.Segments), st.TrimPoint, rep.EntriesDropped)
	}
	if left := len(batchKeys(t, fs)); left != n-201 {
		t.Fatalf("at 301 s: %d batch objects left, want %d", left, n-201)
	}
	if recs := checkIntact(t, fs); len(recs) != n-201 || recs[0].SeqNum != 201 {
		t.Fatalf("at 301 s: read %d records from %d, want %d from 201", len(recs), recs[0].SeqNum, n-201)
	}

	// At 355.5 s the whole segment is past the age: it leaves, and its objects go once old.
	rep = pass(355500 * time.Millisecond)
	st = load(t, fs)
	if rep.EntriesDropped != 256 || len(st.Segments) != 0 || st.ReadableStart() != 256 {
		t.Fatalf("at 355.5 s: %d entries dropped, %d segments, readable from %d; want 256, 0, 256",
			rep.EntriesDropped, len(st.Segments), st.ReadableStart())
	}
	fs.advance(11 * time.Minute)
	pass(355600 * time.Millisecond)
	if left := len(batchKeys(t, fs)); left != n-256 {
		t.Fatalf("%d batch objects left, want %d", left, n-256)
	}
	if recs := checkIntact(t, fs); len(recs) != n-256 || recs[0].SeqNum != 256 {
		t.Fatalf("at the end: read %d records from %d, want %d from 256", len(recs), recs[0].SeqNum, n-256)
	}
}
