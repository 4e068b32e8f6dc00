package producer

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// A fixed producer id whose row was evicted from the producer table restarts its batch
// numbers at 1, so the manifest still holds an entry of an earlier run under the same
// (producer id, batch number). When the first write of the new run fails, the committer must
// not take that old entry for its own batch: the new append would be acknowledged with the
// old records' positions and never committed.
func TestEvictedRowRestartDoesNotResolveFromOldEntry(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMemStore()
	cfg := testConfig(mem)
	cfg.ProducerID = "ingest-host-1"

	p := newProducer(t, cfg)
	oldAck, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("old")})
	if err != nil {
		t.Fatal(err)
	}
	closeProducer(t, p)

	// MaxProducers busier producers evict the row, least recently seen first (as Apply's
	// PruneProducers does).
	if _, err := manifest.Update(ctx, mem, cfg.ManifestPath, func(st *manifest.State) error {
		seen := st.Producers[cfg.ProducerID].LastSeenMs
		for i := range manifest.MaxProducers {
			st.Producers[fmt.Sprintf("other-%04d", i)] = manifest.ProducerState{LastBatch: 1, LastSeenMs: seen + 1}
		}
		st.PruneProducers(seen + 1)
		if _, ok := st.Producers[cfg.ProducerID]; ok {
			return fmt.Errorf("row not evicted")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// The restarted producer's first manifest write fails (nothing written).
	f := &failManifest{Store: mem, left: 1, keys: map[string]bool{}}
	cfg.ObjectStore = f
	p = newProducer(t, cfg)
	newAck, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: bodyRecs("new")})
	if err != nil {
		t.Fatal(err)
	}
	closeProducer(t, p)
	if f.left != 0 {
		t.Fatalf("the injected failure did not happen")
	}
	recs, _ := readStream(t, mem, cfg.ManifestPath)
	verify(t, recs, []ackedAppend{{bodies: []string{"old"}, ack: oldAck}, {bodies: []string{"new"}, ack: newAck}}, nil,
		map[string]bool{"old": true, "new": true})
}
