package committer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// TestWriteCheckpointRidesWithCommits: a member served elsewhere (a daemon's group routes)
// writes its checkpoints as a library member does: through the committer the manifest names;
// a check writes nothing, and a stale member learns it is fenced.
func TestWriteCheckpointRidesWithCommits(t *testing.T) {
	ctx := context.Background()
	store := newStream(t)
	_, srv, reg := server(t, store, "c1", nil)
	p, err := producer.New(ctx, producerConfig(store, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for i := range 3 {
		if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte{byte('a' + i)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	gcfg := consumer.DefaultGroupConfig()
	gcfg.ObjectStore, gcfg.Stream, gcfg.Group = store, stream.MustNew(path, "s/data"), "g"
	m1, err := consumer.JoinGroup(ctx, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	if !m1.Created || m1.Checkpoint != 0 {
		t.Fatalf("join: %+v", m1)
	}
	if cp, err := consumer.WriteCheckpoint(ctx, gcfg, m1, 2); err != nil || cp != 2 {
		t.Fatalf("write: %d %v", cp, err)
	}
	if n := counter(t, reg, "sluice_committer_checkpoints_total"); n != 1 {
		t.Fatalf("the committer wrote %v checkpoints, want 1", n)
	}
	if cp, err := consumer.WriteCheckpoint(ctx, gcfg, m1, 1); err != nil || cp != 2 {
		t.Fatalf("check: %d %v, want 2 and no error", cp, err)
	}
	if n := counter(t, reg, "sluice_committer_checkpoints_total"); n != 1 {
		t.Fatalf("a check reached the committer (%v checkpoints)", n)
	}
	if _, err := consumer.WriteCheckpoint(ctx, gcfg, m1, 9); !errors.Is(err, consumer.ErrInvalidRequest) {
		t.Fatalf("a checkpoint past the tail: %v", err)
	}
	m2, err := consumer.JoinGroup(ctx, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Created || m2.Checkpoint != 2 || m2.Epoch <= m1.Epoch {
		t.Fatalf("second join: %+v after %+v", m2, m1)
	}
	var fe *consumer.FencedError
	if _, err := consumer.WriteCheckpoint(ctx, gcfg, m1, 3); !errors.As(err, &fe) || fe.Current != m2.Epoch {
		t.Fatalf("stale member's write: %v, want FencedError with epoch %d", err, m2.Epoch)
	}
	gone := m2
	gone.Generation[0]++
	if _, err := consumer.WriteCheckpoint(ctx, gcfg, gone, 3); !errors.Is(err, manifest.ErrGenerationChanged) {
		t.Fatalf("a member of another generation: %v", err)
	}
	if cp, err := consumer.WriteCheckpoint(ctx, gcfg, m2, 3); err != nil || cp != 3 {
		t.Fatalf("current member's write: %d %v", cp, err)
	}
}
