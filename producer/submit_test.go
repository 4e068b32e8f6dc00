package producer

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
)

// TestSubmitTicketsAcrossBatches: the records of one client-side batch share a ticket
// channel; each ticket still resolves with its own record's seq_num, across batches that
// Submit completed by count, by bytes (the record that overflows starts the next), by a
// record that fills a batch alone, and by Flush.
func TestSubmitTicketsAcrossBatches(t *testing.T) {
	cfg := testConfig(newStreamStore(t))
	cfg.Batching.Linger = time.Hour
	cfg.Batching.MaxBatchRecords = 4
	cfg.Batching.MaxBatchBytes = 200
	p := newProducer(t, cfg)
	ctx := context.Background()
	sizes := []int{1, 1, 1, 1, 1, 1, 150, 100, 1, 192, 1, 1, 100, 100, 1}
	var tickets []*RecordTicket
	for i, n := range sizes {
		rt, err := p.Submit(ctx, batchfmt.Record{Body: bytes.Repeat([]byte{byte('a' + i)}, n)})
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, rt)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, rt := range tickets {
		ack, err := rt.Wait(ctx)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if ack.SeqNum != uint64(i) {
			t.Errorf("record %d got seq_num %d", i, ack.SeqNum)
		}
	}
}
