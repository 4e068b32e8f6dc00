package gc

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

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
