package manifest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// Property: the point ExpiredPrefix returns never lies past a record that is not older than
// the age (arrivals shuffled, some entries without records, random trim points, nested
// levels), never past the tail, and is 0 or above the trim point.
func TestExpiredPrefixNeverPassesAYoungRecord(t *testing.T) {
	ctx := context.Background()
	raised := 0
	for trial := range 12 {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		store := objectstore.NewMemStore()
		cfg := DefaultConfig()
		cfg.Retention = Retention{AgeSecs: 100}
		s, err := NewState(cfg, time.UnixMilli(1))
		if err != nil {
			t.Fatal(err)
		}
		n := 34*SealEntries + 1 + rng.IntN(3000)
		bad := uint64(1 << 60)
		for i := range n {
			rs := make([]batchfmt.Record, 1+rng.IntN(3))
			for j := range rs {
				rs[j].Body = []byte("x")
			}
			in := &batchfmt.AppendInput{Records: rs}
			if rng.IntN(20) == 0 { // an entry whose only append is rejected: no records
				in.MatchSeqNum = &bad
			}
			arr := uint64(i+1) * 1000
			if rng.IntN(50) == 0 { // producers' clocks are not monotonic
				arr = uint64(rng.IntN(n+2000)+1) * 1000
			}
			b := &Batch{Key: fmt.Sprintf("ingest/r-%d", i), ObjectBytes: 1, ProducerID: "p", BatchNum: uint64(i + 1),
				ArrivalMs: arr, Appends: []*batchfmt.AppendInput{in}}
			if _, err := s.Apply(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := seal(ctx, store, "ingest/manifest", s); err != nil {
			t.Fatal(err)
		}
		// seq -> arrival of every record, from a full walk.
		arrivalOf := map[uint64]uint64{}
		if err := NewIndex(store, s).Walk(ctx, 0, func(e *Entry) error {
			for q := e.FirstSeq; q < e.EndSeq(); q++ {
				arrivalOf[q] = e.Arrival
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for k := range 40 {
			st := s.Clone()
			st.TrimPoint = uint64(rng.IntN(int(st.Tail.SeqNum) + 1))
			if k%3 == 0 {
				st.TrimPoint = 0
			}
			nowMs := uint64(rng.IntN(n+3000)) * 1000
			p, err := NewIndex(store, st).ExpiredPrefix(ctx, nowMs)
			if err != nil {
				t.Fatal(err)
			}
			if p == 0 {
				continue
			}
			if p <= st.TrimPoint || p > st.Tail.SeqNum {
				t.Fatalf("trial %d: point %d, trim %d, tail %d", trial, p, st.TrimPoint, st.Tail.SeqNum)
			}
			raised++
			expired := st.expiredBy(nowMs)
			for q := st.TrimPoint; q < p; q++ {
				if !expired(arrivalOf[q]) {
					t.Fatalf("trial %d: point %d passes record %d (arrival %d) not past the age at %d (trim %d)",
						trial, p, q, arrivalOf[q], nowMs, st.TrimPoint)
				}
			}
		}
	}
	t.Logf("raises checked: %d", raised)
	if raised == 0 {
		t.Fatal("no trial raised the trim point: the property was never exercised")
	}
}
