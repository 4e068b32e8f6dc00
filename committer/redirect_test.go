package committer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// TestWritersFollowTheRoleToItsHolder: a producer and a group member configured with a
// committer that does not hold the stream's role (the role was taken after they read the
// manifest) are answered role_held and send their request to the holder, which commits it;
// their next requests go to the holder at once, and nothing is committed directly.
func TestWritersFollowTheRoleToItsHolder(t *testing.T) {
	ctx := context.Background()
	store := newStream(t)
	_, holder, holderReg := server(t, store, "holder", nil)
	_, other, otherReg := server(t, store, "other", nil)

	// Both writers read the manifest before any committer held the role.
	late, err := producer.New(ctx, producerConfig(store, other.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close(ctx)
	ccfg := consumer.DefaultGroupConfig()
	ccfg.ObjectStore, ccfg.Stream = store, stream.MustNew(path, "s/data")
	ccfg.Group, ccfg.AckInterval, ccfg.Committer.URL = "g", time.Hour, other.URL // only explicit flushes
	member, err := consumer.Open(ctx, ccfg, consumer.GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close(ctx)

	acks := runProducers(t, "first", 1, 1, func(int) producer.Config { return producerConfig(store, holder.URL) })
	const appends = 3
	for i := range appends {
		body := fmt.Sprintf("late-%d", i)
		ack, err := late.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte(body)}}})
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, acked{[]string{body}, ack})
	}
	verify(t, store, acks)
	if n := counter(t, otherReg, "sluice_committer_requests_total"); n != 1 {
		t.Fatalf("the committer without the role got %v requests, want 1 (then the producer knew the holder)", n)
	}
	if n := counter(t, holderReg, "sluice_committer_requests_total"); n != float64(len(acks)) {
		t.Fatalf("the holder got %v requests for %d appends: the rest were committed directly", n, len(acks))
	}

	if _, err := member.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if err := member.AckThrough(0); err != nil {
		t.Fatal(err)
	}
	if err := member.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := counter(t, holderReg, "sluice_committer_checkpoints_total"); n != 1 {
		t.Fatalf("the holder wrote %v checkpoints, want the member's 1", n)
	}
	if n := counter(t, otherReg, "sluice_committer_requests_total"); n != 2 {
		t.Fatalf("the committer without the role got %v requests, want 2 (the producer's and the member's first)", n)
	}
	snap, err := manifest.Open(store, path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp := snap.State.Groups["g"].Checkpoint; cp != 1 {
		t.Fatalf("checkpoint %d, want 1", cp)
	}
}
