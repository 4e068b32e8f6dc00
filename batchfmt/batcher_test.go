package batchfmt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestBatcher(t *testing.T, cfg BatchingConfig, opts ...BatcherOption) (*Batcher, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, err := NewBatcher(cfg, append([]BatcherOption{WithClock(clk.now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b, clk
}

// body returns a record whose metered size is exactly n (n >= 8).
func sizedRecord(n int) Record { return Record{Body: bytes.Repeat([]byte{'x'}, n-8)} }

func mustAdd(t *testing.T, b *Batcher, r Record) []AppendInput {
	t.Helper()
	out, err := b.Add(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDefaultBatchingConfig(t *testing.T) {
	c := DefaultBatchingConfig()
	if c.Linger != 5*time.Millisecond || c.MaxBatchRecords != 1000 || c.MaxBatchBytes != 1<<20 {
		t.Fatalf("defaults = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (BatchingConfig{Linger: 0, MaxBatchRecords: 1, MaxBatchBytes: 8}).Validate(); err != nil {
		t.Fatalf("lower bounds rejected: %v", err)
	}
}

func TestBatchingConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  BatchingConfig
		want []string
	}{
		{BatchingConfig{Linger: time.Millisecond, MaxBatchRecords: 0, MaxBatchBytes: 1024}, []string{"max_batch_records must be between 1 and 1000, got 0"}},
		{BatchingConfig{Linger: time.Millisecond, MaxBatchRecords: 1001, MaxBatchBytes: 1024}, []string{"max_batch_records must be between 1 and 1000, got 1001"}},
		{BatchingConfig{Linger: time.Millisecond, MaxBatchRecords: 1, MaxBatchBytes: 7}, []string{"max_batch_bytes must be between 8 and 1048576 bytes, got 7"}},
		{BatchingConfig{Linger: time.Millisecond, MaxBatchRecords: 1, MaxBatchBytes: 1<<20 + 1}, []string{"max_batch_bytes must be between 8 and 1048576 bytes, got 1048577"}},
		{BatchingConfig{Linger: -time.Millisecond, MaxBatchRecords: 1, MaxBatchBytes: 8}, []string{"linger must not be negative, got -1ms"}},
		{BatchingConfig{Linger: -1, MaxBatchRecords: -5, MaxBatchBytes: 0}, []string{"linger must not be negative", "max_batch_records must be between 1 and 1000, got -5", "max_batch_bytes must be between 8 and 1048576 bytes, got 0"}},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if err == nil {
			t.Fatalf("%+v: no error", tc.cfg)
		}
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v does not match ErrInvalidConfig", tc.cfg, err)
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%+v: %v is not a *ConfigError", tc.cfg, err)
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(tc.want) {
			t.Errorf("%+v: got %d errors %q, want %d", tc.cfg, len(lines), lines, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%+v: error %d = %q, want %q", tc.cfg, i, lines[i], w)
			}
		}
		if _, err := NewBatcher(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewBatcher(%+v) = %v", tc.cfg, err)
		}
	}
}

func TestNewBatcherReportsAllProblems(t *testing.T) {
	_, err := NewBatcher(BatchingConfig{MaxBatchRecords: 0, MaxBatchBytes: 8}, WithFencingToken(strings.Repeat("t", 49)))
	if err == nil || !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "fencing token length (49) exceeds 48 bytes") {
		t.Fatalf("err = %v", err)
	}
}

func TestBatcherOversizedRecord(t *testing.T) {
	b, _ := newTestBatcher(t, DefaultBatchingConfig())
	mustAdd(t, b, sizedRecord(100))
	_, err := b.Add(Record{Body: make([]byte, 2<<20-8)})
	const want = "record size in metered bytes (2097152) exceeds max_batch_bytes (1048576)"
	var te *RecordTooLargeError
	if err == nil || err.Error() != want || !errors.As(err, &te) || te.Size != 2<<20 || te.Max != 1<<20 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if b.Len() != 1 || b.MeteredBytes() != 100 {
		t.Fatalf("rejected record changed the batch: %d records, %d bytes", b.Len(), b.MeteredBytes())
	}
	// A record of exactly max_batch_bytes fits, alone.
	b2, _ := newTestBatcher(t, BatchingConfig{Linger: time.Second, MaxBatchRecords: 10, MaxBatchBytes: 50})
	if out := mustAdd(t, b2, sizedRecord(50)); len(out) != 1 || len(out[0].Records) != 1 {
		t.Fatalf("exact-size record: %d batches", len(out))
	}
}

func TestBatcherRejectsInvalidRecord(t *testing.T) {
	b, _ := newTestBatcher(t, DefaultBatchingConfig())
	_, err := b.Add(Record{Headers: []Header{{Value: []byte("bogus")}}})
	var re *RecordError
	if !errors.As(err, &re) || re.Reason != ReasonUnknownCommand {
		t.Fatalf("err = %v", err)
	}
}

func TestBatcherFlushOnCount(t *testing.T) {
	b, _ := newTestBatcher(t, BatchingConfig{Linger: time.Hour, MaxBatchRecords: 3, MaxBatchBytes: 1 << 20})
	var got []int
	for i := 0; i < 7; i++ {
		for _, in := range mustAdd(t, b, sizedRecord(10)) {
			got = append(got, len(in.Records))
		}
	}
	if in, ok := b.Flush(); ok {
		got = append(got, len(in.Records))
	}
	if want := []int{3, 3, 1}; !equalInts(got, want) {
		t.Fatalf("batch sizes %v, want %v", got, want)
	}
	if _, ok := b.Flush(); ok {
		t.Fatal("second Flush returned a batch")
	}
}

func TestBatcherFlushOnBytesAndOverflow(t *testing.T) {
	b, _ := newTestBatcher(t, BatchingConfig{Linger: time.Hour, MaxBatchRecords: 1000, MaxBatchBytes: 100})
	// 40 + 40 = 80; the next 40 would overflow: the open batch completes and the record starts
	// the next one. 40 + 60 = 100 reaches the limit exactly and completes at once.
	if out := mustAdd(t, b, sizedRecord(40)); len(out) != 0 {
		t.Fatal("flushed early")
	}
	mustAdd(t, b, sizedRecord(40))
	out := mustAdd(t, b, sizedRecord(40))
	if len(out) != 1 || len(out[0].Records) != 2 || out[0].MeteredSize() != 80 {
		t.Fatalf("overflow: %+v", out)
	}
	if b.Len() != 1 || b.MeteredBytes() != 40 {
		t.Fatalf("overflowed record not carried: len %d bytes %d", b.Len(), b.MeteredBytes())
	}
	out = mustAdd(t, b, sizedRecord(60))
	if len(out) != 1 || len(out[0].Records) != 2 || out[0].MeteredSize() != 100 || b.Len() != 0 {
		t.Fatalf("reaching the byte limit: %+v, open %d", out, b.Len())
	}
}

func TestBatcherLinger(t *testing.T) {
	b, clk := newTestBatcher(t, BatchingConfig{Linger: 5 * time.Millisecond, MaxBatchRecords: 1000, MaxBatchBytes: 1 << 20})
	if _, ok := b.Deadline(); ok {
		t.Fatal("deadline without a batch")
	}
	start := clk.t
	mustAdd(t, b, sizedRecord(10))
	clk.advance(3 * time.Millisecond)
	mustAdd(t, b, sizedRecord(10)) // linger counts from the first record, not this one
	d, ok := b.Deadline()
	if !ok || !d.Equal(start.Add(5*time.Millisecond)) {
		t.Fatalf("deadline %v, want %v", d, start.Add(5*time.Millisecond))
	}
	clk.advance(time.Millisecond)
	if _, ok := b.Poll(); ok {
		t.Fatal("Poll flushed before the deadline")
	}
	clk.advance(time.Millisecond)
	in, ok := b.Poll()
	if !ok || len(in.Records) != 2 {
		t.Fatalf("Poll at the deadline: %v %d", ok, len(in.Records))
	}
	// A record arriving after an open batch's deadline completes that batch first.
	mustAdd(t, b, sizedRecord(10))
	clk.advance(10 * time.Millisecond)
	out := mustAdd(t, b, sizedRecord(10))
	if len(out) != 1 || len(out[0].Records) != 1 || b.Len() != 1 {
		t.Fatalf("late record: %d batches, open %d", len(out), b.Len())
	}
	if d, _ := b.Deadline(); !d.Equal(clk.t.Add(5 * time.Millisecond)) {
		t.Fatalf("new batch deadline %v, want %v", d, clk.t.Add(5*time.Millisecond))
	}
}

func TestBatcherZeroLinger(t *testing.T) {
	b, _ := newTestBatcher(t, BatchingConfig{Linger: 0, MaxBatchRecords: 1000, MaxBatchBytes: 1 << 20})
	mustAdd(t, b, sizedRecord(10))
	if out := mustAdd(t, b, sizedRecord(10)); len(out) != 1 {
		t.Fatalf("zero linger: a batch is due at once; got %d batches", len(out))
	}
	if _, ok := b.Poll(); !ok {
		t.Fatal("zero linger: Poll did not flush")
	}
}

func TestBatcherFencingAndMatchSeqNum(t *testing.T) {
	b, _ := newTestBatcher(t, BatchingConfig{Linger: time.Hour, MaxBatchRecords: 2, MaxBatchBytes: 1 << 20},
		WithFencingToken("tok"), WithMatchSeqNum(100))
	var batches []AppendInput
	for i := 0; i < 5; i++ {
		batches = append(batches, mustAdd(t, b, sizedRecord(9))...)
	}
	if in, ok := b.Flush(); ok {
		batches = append(batches, in)
	}
	want := []uint64{100, 102, 104}
	if len(batches) != 3 {
		t.Fatalf("%d batches", len(batches))
	}
	for i, in := range batches {
		if in.FencingToken == nil || *in.FencingToken != "tok" {
			t.Errorf("batch %d: fencing token %v", i, in.FencingToken)
		}
		if in.MatchSeqNum == nil || *in.MatchSeqNum != want[i] {
			t.Errorf("batch %d: match_seq_num %v, want %d", i, in.MatchSeqNum, want[i])
		}
		if err := in.Validate(); err != nil {
			t.Errorf("batch %d invalid: %v", i, err)
		}
	}
	if n, ok := b.NextMatchSeqNum(); !ok || n != 105 {
		t.Fatalf("next match_seq_num %d", n)
	}
	// Each batch owns its pointers.
	*batches[0].MatchSeqNum = 0
	if *batches[1].MatchSeqNum != 102 {
		t.Fatal("batches share match_seq_num storage")
	}
	// Without options, neither is set.
	b2, _ := newTestBatcher(t, BatchingConfig{Linger: time.Hour, MaxBatchRecords: 1, MaxBatchBytes: 1 << 20})
	out := mustAdd(t, b2, sizedRecord(9))
	if len(out) != 1 || out[0].MatchSeqNum != nil || out[0].FencingToken != nil {
		t.Fatalf("unexpected conditions: %+v", out)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBatcherProperty feeds random records with random clock steps and polls, and checks the
// seeds' rules on the batches that come out.
func TestBatcherProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 3))
	for k := 0; k < 50; k++ {
		cfg := BatchingConfig{
			Linger:          time.Duration(r.IntN(10)) * time.Millisecond,
			MaxBatchRecords: 1 + r.IntN(20),
			MaxBatchBytes:   8 + r.IntN(500),
		}
		start := uint64(r.IntN(1000))
		b, clk := newTestBatcher(t, cfg, WithMatchSeqNum(start), WithFencingToken("f"))
		var sent []int // metered sizes, in order, of accepted records
		var got []AppendInput
		var firstAt []time.Time // when each batch's first record was added
		var outAt []time.Time   // when each batch came out
		pendingFirst := time.Time{}
		emit := func(ins ...AppendInput) {
			for _, in := range ins {
				got = append(got, in)
				firstAt = append(firstAt, pendingFirst)
				outAt = append(outAt, clk.t)
				pendingFirst = clk.t // only meaningful if the next batch already has a record
			}
		}
		for i := 0; i < 300; i++ {
			clk.advance(time.Duration(r.IntN(3)) * time.Millisecond)
			if r.IntN(4) == 0 {
				if in, ok := b.Poll(); ok {
					emit(in)
				}
				continue
			}
			size := 8 + r.IntN(cfg.MaxBatchBytes+20)
			wasEmpty := b.Len() == 0
			out, err := b.Add(sizedRecord(size))
			if size > cfg.MaxBatchBytes {
				var te *RecordTooLargeError
				if !errors.As(err, &te) {
					t.Fatalf("oversized record: %v", err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if wasEmpty {
				pendingFirst = clk.t
			}
			// When a batch completes before this record joins, the record starts the next.
			for j, in := range out {
				got = append(got, in)
				firstAt = append(firstAt, pendingFirst)
				outAt = append(outAt, clk.t)
				if j == 0 && len(out) == 2 || (len(out) == 1 && b.Len() == 1) {
					pendingFirst = clk.t
				}
			}
			sent = append(sent, size)
		}
		if in, ok := b.Flush(); ok {
			got = append(got, in)
		}
		// Every accepted record comes out once, in order; batches respect the limits; an
		// overflow completed the batch before it; conditions advance.
		idx := 0
		seq := start
		for bi, in := range got {
			if len(in.Records) == 0 || len(in.Records) > cfg.MaxBatchRecords || in.MeteredSize() > cfg.MaxBatchBytes {
				t.Fatalf("batch %d: %d records, %d bytes breaks %+v", bi, len(in.Records), in.MeteredSize(), cfg)
			}
			for _, rec := range in.Records {
				if idx >= len(sent) || rec.MeteredSize() != sent[idx] {
					t.Fatalf("batch %d: record %d out of order", bi, idx)
				}
				idx++
			}
			if *in.MatchSeqNum != seq || *in.FencingToken != "f" {
				t.Fatalf("batch %d: match_seq_num %d want %d", bi, *in.MatchSeqNum, seq)
			}
			seq += uint64(len(in.Records))
			if bi+1 < len(got) && len(in.Records) < cfg.MaxBatchRecords && in.MeteredSize()+got[bi+1].Records[0].MeteredSize() <= cfg.MaxBatchBytes {
				// The batch was not full, so only linger (or Poll) may have completed it.
				if !firstAt[bi].IsZero() && outAt[bi].Before(firstAt[bi].Add(cfg.Linger)) {
					t.Fatalf("batch %d completed at %v before its linger (first record %v)", bi, outAt[bi], firstAt[bi])
				}
			}
		}
		if idx != len(sent) {
			t.Fatalf("%d records sent, %d came out", len(sent), idx)
		}
	}
}
