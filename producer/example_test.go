package producer_test

import (
	"context"
	"fmt"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

func Example() {
	ctx := context.Background()
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = objectstore.NewMemStore() // or storeurl.Open(ctx, "s3://bucket/prefix?...")
	p, err := producer.New(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx) // drains: every accepted append resolves first

	// One append: committed atomically, acknowledged with its positions.
	ack, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{
		{Body: []byte("hello")},
		{Body: []byte("world")},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("seq_nums", ack.Start.SeqNum, "to", ack.End.SeqNum)

	// Optimistic concurrency: only if the stream's tail is still where we think it is.
	next := ack.End.SeqNum
	_, err = p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("!")}}, MatchSeqNum: &next})
	fmt.Println("conditional append:", err)

	// Per-record submission through client-side batching.
	t, err := p.Submit(ctx, batchfmt.Record{Body: []byte("one more")})
	if err != nil {
		panic(err)
	}
	rack, err := t.Wait(ctx)
	fmt.Println("record", rack.SeqNum, err)
	// Output:
	// seq_nums 0 to 2
	// conditional append: <nil>
	// record 3 <nil>
}
