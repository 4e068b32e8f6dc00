package consumer_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/objectstore"
)

// A unary read of up to 10 records from seq_num 100, as an HTTP GET would do it.
func ExampleReader_Read() {
	ctx := context.Background()
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = objectstore.NewMemStore()
	r, err := consumer.NewReader(cfg)
	if err != nil {
		panic(err)
	}
	count := uint64(10)
	b, err := r.Read(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(100), Count: &count})
	var rng *consumer.RangeError
	switch {
	case errors.As(err, &rng):
		fmt.Println("416, tail", rng.Tail.SeqNum)
	case err != nil:
		fmt.Println(err)
	default:
		for _, rec := range b.Records {
			fmt.Println(rec.SeqNum, rec.Timestamp, string(rec.Body))
		}
	}
}

// A member of consumer group "billing" that processes records and acknowledges them; a
// newer member fences it.
func ExampleOpen() {
	ctx := context.Background()
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = objectstore.NewMemStore()
	cfg.Group = "billing"
	c, err := consumer.Open(ctx, cfg, consumer.GroupOptions{SkipCommands: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	for {
		b, err := c.Next(ctx)
		if errors.Is(err, consumer.ErrFenced) {
			return // another member took over
		}
		if err != nil {
			return
		}
		for _, rec := range b.Records {
			_ = rec // process
		}
		if n := len(b.Records); n > 0 {
			_ = c.AckThrough(b.Records[n-1].SeqNum)
		}
	}
}
