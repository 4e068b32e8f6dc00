package committer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// TestCheckpointsRideWithCommits: a group member whose stream has a committer sends its
// checkpoints there, and they are written with the commits; a member fenced by a newer one
// learns it from the committer's answer.
func TestCheckpointsRideWithCommits(t *testing.T) {
	ctx := context.Background()
	store := newStream(t)
	_, srv, reg := server(t, store, "c1", nil)
	p, err := producer.New(ctx, producerConfig(store, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for i := range 5 {
		if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte{byte('a' + i)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	ccfg := consumer.DefaultGroupConfig()
	ccfg.ObjectStore, ccfg.Stream = store, stream.MustNew(path, "s/data")
	ccfg.Group, ccfg.AckInterval = "g", time.Hour // only explicit flushes
	m1, err := consumer.Open(ctx, ccfg, consumer.GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close(ctx)
	var got uint64
	for got < 5 {
		b, err := m1.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += uint64(len(b.Records))
	}
	last := uint64(3) // records 0..3 now, 4 after the fence
	if err := m1.AckThrough(last); err != nil {
		t.Fatal(err)
	}
	if err := m1.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := counter(t, reg, "sluice_committer_checkpoints_total"); n != 1 {
		t.Fatalf("the committer wrote %v checkpoints, want 1 (the member found it in the manifest's role)", n)
	}
	snap, err := manifest.Open(store, path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp := snap.State.Groups["g"].Checkpoint; cp != last+1 {
		t.Fatalf("checkpoint %d, want %d", cp, last+1)
	}

	m2, err := consumer.Open(ctx, ccfg, consumer.GroupOptions{}) // fences m1
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close(ctx)
	if err := m1.AckThrough(last + 1); err != nil {
		t.Fatal(err)
	}
	var fenced *consumer.FencedError
	if err := m1.Flush(ctx); !errors.As(err, &fenced) {
		t.Fatalf("stale member's flush: %v, want FencedError", err)
	}
	if n := counter(t, reg, "sluice_committer_checkpoints_total"); n != 2 {
		t.Fatalf("the committer was asked %v checkpoints, want 2", n)
	}
}
