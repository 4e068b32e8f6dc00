package gc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestSessionAcrossTrimAndCollection: a following session opened at seq_num 0
// before a trim into a kept segment keeps reading after the collector deleted the objects
// below the trim point: it skips them and continues at the trim point, with no gap after it.
func TestSessionAcrossTrimAndCollection(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	const n = 600
	for range n {
		s.object(1)
	}
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = fs
	cfg.ReadAheadDepth = 4
	r, err := consumer.NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.Open(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	b, err := sess.Next(ctx) // reads some of the first objects
	if err != nil {
		t.Fatal(err)
	}
	last := b.Records[len(b.Records)-1].SeqNum
	s.object(0, batchfmt.TrimRecord(200))
	now := t0
	c, err := NewCollector(fs, testConfig(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	fs.advance(11 * time.Minute)
	rep, err := c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	st := load(t, fs)
	if len(st.Segments) == 0 || rep.Deleted < 150 {
		t.Fatalf("setup: %d segments, %d deleted", len(st.Segments), rep.Deleted)
	}
	for {
		b, err := sess.Next(ctx)
		for _, rec := range b.Records {
			if rec.SeqNum != last+1 && !(last < 200 && rec.SeqNum == 200) {
				t.Fatalf("after %d came %d", last, rec.SeqNum)
			}
			last = rec.SeqNum
		}
		if errors.Is(err, consumer.ErrDone) {
			break
		}
		if err != nil {
			t.Fatalf("read after collection: %v", err)
		}
	}
	if last != n-1 { // a read without Follow ends at the tail it opened at
		t.Fatalf("ended at %d, want %d", last, n-1)
	}
}

// TestStreamcheckAfterTrimCollected: the collector deletes the objects of
// entries wholly below the trim point while the entries stay (here for KeepRecent); the
// tests' own reader (internal/streamcheck) skips them as package consumer does, and does not
// report their keys as referenced.
func TestStreamcheckAfterTrimCollected(t *testing.T) {
	ctx := context.Background()
	fs := newFaultStore(objectstore.NewMemStore(), t0)
	s := newStream(t, fs, manifest.DefaultConfig(), nil)
	for range 10 {
		s.object(1)
	}
	s.object(0, batchfmt.TrimRecord(5))
	now := t0
	cfg := testConfig(func() time.Time { return now })
	cfg.KeepRecent = time.Hour // entries stay in the manifest (as in a kept segment)
	c, err := NewCollector(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs.advance(11 * time.Minute)
	now = t0.Add(time.Minute)
	rep, err := c.Pass(ctx, ingest)
	if err != nil {
		t.Fatal(err)
	}
	st := load(t, fs)
	t.Logf("pass: deleted %d, entries in manifest %d, readable start %d", rep.Deleted, len(st.Entries), st.ReadableStart())
	if recs := checkIntact(t, fs); len(recs) != 6 || recs[0].SeqNum != 5 {
		t.Fatalf("consumer read %d records", len(recs))
	}
	_, _, refs, err := streamcheck.Read(ctx, fs, mpath)
	if err != nil {
		t.Errorf("streamcheck.Read after the collector ran: %v", err)
	}
	gone := 0
	for k := range refs {
		if _, err := fs.Head(ctx, k); err != nil {
			gone++
		}
	}
	if gone > 0 {
		t.Errorf("streamcheck reports %d keys as referenced whose objects the collector deleted", gone)
	}
}
