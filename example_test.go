package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// A producer appends records to a stream in an object store (here in memory); a reader reads
// them back in order, each at its position.
func Example() {
	ctx := context.Background()
	store := objectstore.NewMemStore()

	pcfg := producer.DefaultConfig()
	pcfg.ObjectStore = store // the stream is ingest/manifest + ingest/...; New creates it (Config.CreateStream)
	p, err := producer.New(ctx, pcfg)
	if err != nil {
		log.Fatal(err)
	}
	ack, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{
		{Body: []byte("hello")},
		{Headers: []batchfmt.Header{{Name: []byte("type"), Value: []byte("greeting")}}, Body: []byte("world")},
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("appended seq_nums %d..%d, tail %d\n", ack.Start.SeqNum, ack.End.SeqNum-1, ack.Tail.SeqNum)
	if err := p.Close(ctx); err != nil {
		log.Fatal(err)
	}

	ccfg := consumer.DefaultConfig()
	ccfg.ObjectStore = store
	r, err := consumer.NewReader(ccfg)
	if err != nil {
		log.Fatal(err)
	}
	recs, err := r.ReadAll(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(0)})
	if err != nil {
		log.Fatal(err)
	}
	for _, rec := range recs {
		fmt.Printf("%d %s headers=%d\n", rec.SeqNum, rec.Body, len(rec.Headers))
	}
	// Output:
	// appended seq_nums 0..1, tail 2
	// 0 hello headers=0
	// 1 world headers=1
}

// Many streams share one store: package catalog says where a named stream lives, so a
// library user, the CLI and the daemon agree on it. Here the store is a local directory.
func Example_namedStreamInDirectory() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sluice-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := storeurl.Open(ctx, dir) // also file:///abs/dir, s3://bucket/prefix?..., mem://
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	st, err := stream.Locate("", "orders/eu") // root namespace, as `sluice append orders/eu`
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.ManifestKey(), st.DataPrefix())

	pcfg := producer.DefaultConfig()
	pcfg.ObjectStore, pcfg.Stream = store, st
	p, err := producer.New(ctx, pcfg)
	if err != nil {
		log.Fatal(err)
	}
	// Submit batches single records (the seeds' batching: 5 ms linger, 1000 records, 1 MiB).
	var tickets []*producer.RecordTicket
	for _, body := range []string{"order-1", "order-2", "order-3"} {
		t, err := p.Submit(ctx, batchfmt.Record{Body: []byte(body)})
		if err != nil {
			log.Fatal(err)
		}
		tickets = append(tickets, t)
	}
	for _, t := range tickets {
		ra, err := t.Wait(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("acked seq_num", ra.SeqNum)
	}
	if err := p.Close(ctx); err != nil {
		log.Fatal(err)
	}
	streams, _, err := catalog.ListStreams(ctx, store, "", "", "", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("streams:", streams[0].Name())
	// Output:
	// streams/orders%2Feu/manifest streams/orders%2Feu/data
	// acked seq_num 0
	// acked seq_num 1
	// acked seq_num 2
	// streams: orders/eu
}

// A consumer group has one active member; acknowledgements move the group's checkpoint, and
// the next member resumes after it.
func Example_consumerGroup() {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	pcfg := producer.DefaultConfig()
	pcfg.ObjectStore = store
	p, err := producer.New(ctx, pcfg)
	if err != nil {
		log.Fatal(err)
	}
	in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("a")}, {Body: []byte("b")}, {Body: []byte("c")}}}
	if _, err := p.AppendSync(ctx, in); err != nil {
		log.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		log.Fatal(err)
	}

	ccfg := consumer.DefaultGroupConfig()
	ccfg.ObjectStore = store
	ccfg.Group = "billing"
	ccfg.MaxBatchRecords = 2 // at most 2 records per Next

	c, err := consumer.Open(ctx, ccfg, consumer.GroupOptions{})
	if err != nil {
		log.Fatal(err)
	}
	b, err := c.Next(ctx) // follows the tail: waits if nothing is there
	if err != nil {
		log.Fatal(err)
	}
	for _, rec := range b.Records {
		fmt.Printf("member 1 got %d %s\n", rec.SeqNum, rec.Body)
	}
	if err := c.AckThrough(b.Records[len(b.Records)-1].SeqNum); err != nil {
		log.Fatal(err)
	}
	if err := c.Close(ctx); err != nil { // writes the checkpoint
		log.Fatal(err)
	}

	c2, err := consumer.Open(ctx, ccfg, consumer.GroupOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer c2.Close(ctx)
	b, err = c2.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("member 2 resumes at %d %s\n", b.Records[0].SeqNum, b.Records[0].Body)
	// Output:
	// member 1 got 0 a
	// member 1 got 1 b
	// member 2 resumes at 2 c
}

// Appends may carry conditions, checked at commit time against the stream: match_seq_num
// (optimistic concurrency) and a fencing token (one writer at a time).
func Example_conditions() {
	ctx := context.Background()
	pcfg := producer.DefaultConfig()
	pcfg.ObjectStore = objectstore.NewMemStore()
	p, err := producer.New(ctx, pcfg)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)

	zero := uint64(0)
	_, err = p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("first")}}, MatchSeqNum: &zero})
	fmt.Println("append at 0:", err)
	_, err = p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("again")}}, MatchSeqNum: &zero})
	var mismatch *manifest.SeqNumMismatchError
	if errors.As(err, &mismatch) {
		fmt.Println("append at 0 again: rejected, the tail is at", mismatch.Expected)
	}

	// A fence record sets the token; appends carrying another token are rejected.
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("writer-1")}}); err != nil {
		log.Fatal(err)
	}
	stale := "writer-0"
	_, err = p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("late")}}, FencingToken: &stale})
	var fenced *manifest.FencingTokenMismatchError
	if errors.As(err, &fenced) {
		fmt.Printf("stale writer: rejected, the token is %q\n", fenced.Actual)
	}
	// Output:
	// append at 0: <nil>
	// append at 0 again: rejected, the tail is at 1
	// stale writer: rejected, the token is "writer-1"
}
