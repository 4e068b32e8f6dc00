package manifest

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
)

// retState builds a state with the given config from batches of sizes[i] records arriving at
// arrivals[i] ms.
func retState(t *testing.T, cfg Config, sizes []int, arrivals []uint64) *State {
	t.Helper()
	s, err := NewState(cfg, time.UnixMilli(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		rs := make([]batchfmt.Record, n)
		for j := range rs {
			rs[j].Body = []byte("x")
		}
		b := &Batch{Key: fmt.Sprintf("ingest/ret-%d", i), ObjectBytes: 1, ProducerID: "p", BatchNum: uint64(i + 1),
			ArrivalMs: arrivals[i], Appends: []*batchfmt.AppendInput{{Records: rs}}}
		if _, err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestApplyRetention(t *testing.T) {
	sizes := []int{3, 2, 4, 1} // seq_nums [0,3) [3,5) [5,9) [9,10)
	arrivals := []uint64{1000, 2000, 3000, 4000}

	t.Run("trim", func(t *testing.T) {
		s := retState(t, DefaultConfig(), sizes, arrivals)
		s.TrimPoint = 6
		if got := s.ReadableStart(); got != 6 {
			t.Fatalf("readable start %d", got)
		}
		if n := s.ApplyRetention(10_000, 0); n != 2 || s.FirstSeq() != 5 {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
		if s.IsEmpty() {
			t.Fatal("empty")
		}
	})
	t.Run("trim to the tail drops the last entry", func(t *testing.T) {
		s := retState(t, DefaultConfig(), sizes, arrivals)
		s.TrimPoint = 10
		if n := s.ApplyRetention(10_000, 0); n != 4 || len(s.Entries) != 0 || s.FirstSeq() != 10 || !s.IsEmpty() {
			t.Fatalf("dropped %d, %d entries left, first seq %d", n, len(s.Entries), s.FirstSeq())
		}
		if s.Tail.SeqNum != 10 {
			t.Fatalf("tail moved: %+v", s.Tail)
		}
	})
	t.Run("keep recent", func(t *testing.T) {
		s := retState(t, DefaultConfig(), sizes, arrivals)
		s.TrimPoint = 10
		// Entries that arrived less than 2500 ms before now=5000 stay, and so do all after them.
		if n := s.ApplyRetention(5000, 2500); n != 2 || s.FirstSeq() != 5 || s.ReadableStart() != 10 || !s.IsEmpty() {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
	})
	t.Run("age", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Retention = Retention{AgeSecs: 2}
		s := retState(t, cfg, sizes, arrivals)
		if n := s.ApplyRetention(3000, 0); n != 0 {
			t.Fatalf("nothing is older than 2 s at 3 s, dropped %d", n)
		}
		if n := s.ApplyRetention(4001, 0); n != 2 || s.FirstSeq() != 5 {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
	})
	t.Run("queue", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.QueueMode = true
		s := retState(t, cfg, sizes, arrivals)
		if n := s.ApplyRetention(10_000, 0); n != 0 {
			t.Fatalf("queue without groups dropped %d", n)
		}
		s.OpenGroup("a")
		s.OpenGroup("b")
		if _, err := s.SetCheckpoint("a", 1, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetCheckpoint("b", 1, 4); err != nil {
			t.Fatal(err)
		}
		if n := s.ApplyRetention(10_000, 0); n != 1 || s.FirstSeq() != 3 {
			t.Fatalf("dropped %d, first seq %d", n, s.FirstSeq())
		}
		if _, err := s.SetCheckpoint("b", 1, 10); err != nil {
			t.Fatal(err)
		}
		if n := s.ApplyRetention(10_000, 0); n != 3 || len(s.Entries) != 0 || !s.IsEmpty() {
			t.Fatalf("dropped %d, %d entries left", n, len(s.Entries))
		}
	})
}
