package consumer

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestNextNeverReturnsRecordsWithAnError: records read before a corrupt object come without
// the error, and the error with the next call, so a caller that drops a failed batch (and a
// group member that later acks through a newer seq_num) never skips records it was not shown.
func TestNextNeverReturnsRecordsWithAnError(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	rng := rand.New(rand.NewPCG(seed(t), 9))
	f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.standard(rng, 6)
	snap, err := manifest.Load(ctx, store, f.path)
	if err != nil {
		t.Fatal(err)
	}
	victim := snap.State.Entries[3]
	data, _, err := objectstore.ReadAll(ctx, store, victim.Key)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if _, err := objectstore.PutBytes(ctx, store, victim.Key, data, objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	// One big batch per call, with every object fetched ahead: the first call reaches the
	// corrupt object with records of the earlier ones in hand.
	r := f.reader(func(c *Config) {
		c.FetchAttempts = 1
		c.ReadAheadDepth = 8
		c.MaxBatchRecords = 100000
		c.MaxBatchBytes = 1 << 30
	})
	s, err := r.Open(ctx, ReadRequest{Start: AtSeqNum(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []Record
	for {
		b, err := s.Next(ctx)
		if err != nil {
			if len(b.Records) > 0 {
				t.Fatalf("Next returned %d records together with %v", len(b.Records), err)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("want the corruption, got %v", err)
			}
			break
		}
		got = append(got, b.Records...)
	}
	check(t, "before corruption", got, f.want[:victim.FirstSeq])
}
