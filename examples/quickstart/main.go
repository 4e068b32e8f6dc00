// Command quickstart appends to the stream "orders" in ./sluice-data, the store the sluice
// command uses by default, and reads it back; `sluice read orders` then shows the records.
// README.md prints this file whole.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

func main() {
	ctx := context.Background()
	store, err := storeurl.Open(ctx, "./sluice-data") // or mem://, s3://bucket/prefix?...
	check(err)
	defer store.Close()
	orders, err := stream.Locate("", "orders") // the stream `sluice read orders` reads
	check(err)

	cfg := producer.DefaultConfig()
	cfg.ObjectStore, cfg.Stream = store, orders
	p, err := producer.New(ctx, cfg) // creates the stream if it is not there
	check(err)
	ack, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{
		{Body: []byte("order-1")}, {Body: []byte("order-2")},
	}})
	check(err)
	fmt.Println("appended", ack.Start.SeqNum, "to", ack.End.SeqNum-1)
	t, err := p.Submit(ctx, batchfmt.Record{Body: []byte("order-3")}) // batched for you
	check(err)
	rack, err := t.Wait(ctx)
	check(err)
	fmt.Println("submitted", rack.SeqNum)
	check(p.Close(ctx)) // waits for every accepted append

	rcfg := consumer.DefaultConfig()
	rcfg.ObjectStore, rcfg.Stream = store, orders
	r, err := consumer.NewReader(rcfg)
	check(err)
	recs, err := r.ReadAll(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(0)})
	check(err)
	for _, rec := range recs {
		fmt.Println(rec.SeqNum, string(rec.Body))
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
