package consumer

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestPollAtTail: Poll returns the records as Next does, then, with only command records
// left (skipped by a group member that asked so), an empty batch whose NextSeq has reached
// the tail, at once instead of waiting for appends; and after a new append, that record.
func TestPollAtTail(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, objectstore.NewMemStore(), manifest.DefaultConfig(), batchfmt.CompressionNone)
	f.object([]batchfmt.Record{rec(baseTS, "a"), rec(baseTS+1, "b")}, []batchfmt.Record{batchfmt.FenceRecord("t1"), batchfmt.FenceRecord("t2")})
	c, err := Open(ctx, groupConfig(f, "g"), GroupOptions{SkipCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var got []string
	for {
		b, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			got = append(got, string(r.Body))
		}
		if len(b.Records) == 0 {
			if b.NextSeq != 4 || b.Tail.SeqNum != 4 {
				t.Fatalf("empty poll: NextSeq %d, tail %d; want both at 4 (the fences skipped)", b.NextSeq, b.Tail.SeqNum)
			}
			break
		}
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("polled %q, want a and b", got)
	}
	f.object([]batchfmt.Record{rec(baseTS+2, "c")})
	for {
		b, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Records) > 0 {
			if string(b.Records[0].Body) != "c" || b.Records[0].SeqNum != 4 {
				t.Fatalf("after an append, polled %q at %d, want c at 4", b.Records[0].Body, b.Records[0].SeqNum)
			}
			return
		}
	}
}
