package consumer_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// appendBodies creates the stream at the default paths (producer.New does) and appends one
// record per body.
func appendBodies(ctx context.Context, store objectstore.Store, bodies ...string) {
	pcfg := producer.DefaultConfig()
	pcfg.ObjectStore = store
	p, err := producer.New(ctx, pcfg)
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)
	var recs []batchfmt.Record
	for _, b := range bodies {
		recs = append(recs, batchfmt.Record{Body: []byte(b)})
	}
	if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: recs}); err != nil {
		panic(err)
	}
}

// Unary reads, as an HTTP GET does them: up to 10 records from seq_num 1, then from seq_num
// 100, past the tail (S2's 416).
func ExampleReader_Read() {
	ctx := context.Background()
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = objectstore.NewMemStore()
	appendBodies(ctx, cfg.ObjectStore, "a", "b", "c")
	r, err := consumer.NewReader(cfg)
	if err != nil {
		panic(err)
	}
	count := uint64(10)
	for _, start := range []uint64{1, 100} {
		b, err := r.Read(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(start), Count: &count})
		var rng *consumer.RangeError
		switch {
		case errors.As(err, &rng):
			fmt.Println("416, tail", rng.Tail.SeqNum)
		case err != nil:
			fmt.Println(err)
		default:
			for _, rec := range b.Records {
				fmt.Println(rec.SeqNum, string(rec.Body))
			}
		}
	}
	// Output:
	// 1 b
	// 2 c
	// 416, tail 3
}

// Members of consumer group "billing": the first acknowledges two records and closes (which
// writes its checkpoint); the next resumes after them; a newer member fences it. (The stream
// must exist: consumer.Open makes the group, not the stream.)
func ExampleOpen() {
	ctx := context.Background()
	cfg := consumer.DefaultGroupConfig()
	cfg.ObjectStore = objectstore.NewMemStore()
	cfg.Group = "billing"
	appendBodies(ctx, cfg.ObjectStore, "a", "b", "c")

	first, err := consumer.Open(ctx, cfg, consumer.GroupOptions{SkipCommands: true})
	if err != nil {
		panic(err)
	}
	b, err := first.Next(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("first member got", len(b.Records), "records; acknowledges seq_nums 0 and 1")
	if err := first.AckThrough(1); err != nil {
		panic(err)
	}
	if err := first.Close(ctx); err != nil {
		panic(err)
	}

	second, err := consumer.Open(ctx, cfg, consumer.GroupOptions{SkipCommands: true})
	if err != nil {
		panic(err)
	}
	b, err = second.Next(ctx)
	if err != nil {
		panic(err)
	}
	for _, rec := range b.Records {
		fmt.Println("second member resumes at", rec.SeqNum, string(rec.Body))
	}

	third, err := consumer.Open(ctx, cfg, consumer.GroupOptions{SkipCommands: true})
	if err != nil {
		panic(err)
	}
	defer third.Close(ctx)
	if _, err := second.Next(ctx); errors.Is(err, consumer.ErrFenced) {
		fmt.Println("second member fenced: another member took over")
	}
	_ = second.Close(ctx) // *FencedError: its pending acknowledgements are not written
	// Output:
	// first member got 3 records; acknowledges seq_nums 0 and 1
	// second member resumes at 2 c
	// second member fenced: another member took over
}
