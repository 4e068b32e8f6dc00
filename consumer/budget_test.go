package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// TestReadBudgetProperty: random streams (commands, command-heavy objects, trims),
// random start/count/bytes/until/skip and reader configs; a counted Session read, a counted
// Follow session, and a unary Read must equal the unbounded ReadAll (budget 0) truncated.
func TestReadBudgetProperty(t *testing.T) {
	ctx := context.Background()
	for iter := range 30 {
		rng := rand.New(rand.NewPCG(seed(t), uint64(iter)))
		store := objectstore.NewMemStore()
		f := newFixture(t, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
		ts := uint64(baseTS)
		for o := range 5 + rng.IntN(25) {
			var apps [][]batchfmt.Record
			for range 1 + rng.IntN(3) {
				var recs []batchfmt.Record
				for range 1 + rng.IntN(8) {
					ts += uint64(rng.IntN(4))
					if rng.IntN(3) == 0 {
						recs = append(recs, batchfmt.FenceRecord(""))
					} else {
						recs = append(recs, rec(ts, fmt.Sprintf("o%d-%s", o, randBody(rng))))
					}
				}
				apps = append(apps, recs)
			}
			if rng.IntN(12) == 0 && len(f.want) > 4 {
				apps = append(apps, []batchfmt.Record{batchfmt.TrimRecord(uint64(rng.IntN(len(f.want) / 2)))})
			}
			f.object(apps...)
		}
		n := uint64(len(f.want))
		for q := range 40 {
			mbr := 1 + rng.IntN(25)
			depth := 1 + rng.IntN(6)
			rab := int64(1 + rng.IntN(4000))
			r := f.reader(func(c *Config) {
				c.MaxBatchRecords, c.MaxBatchBytes, c.ReadAheadDepth, c.ReadAheadBytes = mbr, 1<<30, depth, rab
			})
			req := ReadRequest{SkipCommands: rng.IntN(2) == 0}
			switch rng.IntN(3) {
			case 0:
				req.Start = AtSeqNum(uint64(rng.IntN(int(n + 1))))
			case 1:
				req.Start = AtTimestamp(baseTS + uint64(rng.IntN(int(ts-baseTS+3))))
			case 2:
				req.Start = AtTailOffset(uint64(rng.IntN(int(n + 3))))
			}
			if rng.IntN(4) == 0 {
				req.Bytes = u64(uint64(rng.IntN(2000)))
			}
			if rng.IntN(5) == 0 {
				req.Until = u64(baseTS + uint64(rng.IntN(int(ts-baseTS+3))))
			}
			ref, err := r.ReadAll(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			cnt := uint64(rng.IntN(len(ref) + 3))
			want := ref[:min(cnt, uint64(len(ref)))]
			what := fmt.Sprintf("iter %d q %d req %+v count %d depth %d rab %d mbr %d", iter, q, req, cnt, depth, rab, mbr)
			creq := req
			creq.Count = u64(cnt)
			got, err := r.ReadAll(ctx, creq)
			if err != nil {
				t.Fatal(err)
			}
			same(t, what+" session", got, want)

			// Unary Read, with and without a count.
			for _, withCount := range []bool{true, false} {
				ureq := req
				uw := ref
				if withCount {
					ureq.Count = u64(cnt)
					uw = want
				}
				uw = uw[:min(len(uw), mbr)]
				b, err := r.Read(ctx, ureq)
				if err != nil {
					t.Fatal(err)
				}
				same(t, fmt.Sprintf("%s unary count=%v", what, withCount), b.Records, uw)
			}

			// Follow with a count the stream can satisfy.
			if cnt <= uint64(len(ref)) {
				freq := creq
				freq.Follow = true
				fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				s, err := r.Open(fctx, freq)
				if err != nil {
					t.Fatal(err)
				}
				var fg []SequencedRecord
				for {
					b, err := s.Next(fctx)
					fg = append(fg, b.Records...)
					if errors.Is(err, ErrDone) {
						break
					}
					if err != nil {
						t.Fatalf("%s follow: %v after %d records", what, err, len(fg))
					}
				}
				s.Close()
				cancel()
				same(t, what+" follow", fg, want)
			}
		}
	}
}

func same(t *testing.T, what string, got, want []SequencedRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].SeqNum != want[i].SeqNum || string(got[i].Body) != string(want[i].Body) || got[i].Timestamp != want[i].Timestamp {
			t.Fatalf("%s: record %d differs", what, i)
		}
	}
}
