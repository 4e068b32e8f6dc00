package committer_test

import (
	"context"
	"encoding/hex"
	"io"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// unknownStore fails every manifest write with an unknown outcome.
type unknownStore struct{ objectstore.Store }

func (s unknownStore) Put(ctx context.Context, key string, body io.Reader, size int64, c objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if key == path {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, nil)
	}
	return s.Store.Put(ctx, key, body, size, c)
}

// TestRequestTTLBoundsRetries: a request whose writes keep failing with an unknown outcome
// is not retried past RequestTTL; it is answered with CodeStorage (outcome unknown), so that
// no batch is committed long after its producer sent it.
func TestRequestTTLBoundsRetries(t *testing.T) {
	mem := newStream(t)
	snap, err := manifest.Open(mem, path).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL = unknownStore{mem}, "c", "http://c"
	cfg.RequestTTL, cfg.MaxWriteRetries = 50*time.Millisecond, 1000
	cfg.Backoff = manifest.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	in := &batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}}
	req := &wire.Request{ManifestPath: path, Generation: hex.EncodeToString(snap.State.Generation[:]), ProducerID: "p",
		Batches: []wire.Batch{wire.NewBatch(&manifest.Batch{Key: "s/data/k", BatchNum: 1, Appends: []*batchfmt.AppendInput{in}}, nil, nil)}}
	start := time.Now()
	resp := c.Commit(context.Background(), req)
	if resp.Error == nil || resp.Error.Code != wire.CodeStorage {
		t.Fatalf("answer %+v, want CodeStorage", resp.Error)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("answered after %v: the TTL of 50ms did not bound the retries", took)
	}
}
