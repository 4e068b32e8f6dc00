package batchfmt

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// castagnoli is the standard library's table: tests check objects against hash/crc32, not
// against the package's own checksum code.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// testSeed returns the seed for a randomized test: $SLUICE_SEED if set (to replay a
// failure), else a fresh one. It is logged either way.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	return testseed.Get(t)
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// randRecord returns a random valid record; big asks for occasional header values and
// header counts past the 2-byte escape bound.
func randRecord(r *rand.Rand, big bool) Record {
	var rec Record
	if r.IntN(2) == 0 {
		rec.HasTimestamp = true
		rec.Timestamp = r.Uint64()
	}
	switch r.IntN(12) {
	case 0:
		return FenceRecord(string(randBytes(r, r.IntN(MaxFencingTokenLen+1))))
	case 1:
		rec2 := TrimRecord(r.Uint64())
		rec2.HasTimestamp, rec2.Timestamp = rec.HasTimestamp, rec.Timestamp
		return rec2
	}
	nh := r.IntN(4)
	if big && r.IntN(8) == 0 {
		nh = 0xFFFF + r.IntN(3) - 1 // around the escape bound
	}
	for i := 0; i < nh; i++ {
		h := Header{Name: randBytes(r, 1+r.IntN(3))}
		if nh < 10 {
			h.Value = randBytes(r, r.IntN(20))
			if big && r.IntN(6) == 0 {
				h.Value = randBytes(r, 0xFFFF+r.IntN(3)-1)
			}
		}
		rec.Headers = append(rec.Headers, h)
	}
	switch r.IntN(4) {
	case 0:
	case 1:
		rec.Body = randBytes(r, r.IntN(300))
	case 2:
		rec.Body = bytes.Repeat([]byte("abc"), r.IntN(400)) // compressible
	default:
		rec.Body = randBytes(r, 1+r.IntN(8))
	}
	return rec
}

// randAppend returns a random valid append.
func randAppend(r *rand.Rand, big bool) AppendInput {
	var in AppendInput
	n := 1 + r.IntN(8)
	if r.IntN(20) == 0 {
		n = MaxAppendRecords
	}
	total := 0
	for i := 0; i < n; i++ {
		rec := randRecord(r, big && n < 10)
		if total+rec.MeteredSize() > MaxAppendBytes {
			break
		}
		total += rec.MeteredSize()
		in.Records = append(in.Records, rec)
	}
	if len(in.Records) == 0 {
		in.Records = []Record{{}}
	}
	randConditions(r, &in)
	return in
}

// randConditions gives in a match_seq_num and a fencing token, each half of the time.
func randConditions(r *rand.Rand, in *AppendInput) {
	if r.IntN(2) == 0 {
		s := r.Uint64()
		in.MatchSeqNum = &s
	}
	if r.IntN(2) == 0 {
		tok := string(randBytes(r, r.IntN(MaxFencingTokenLen+1)))
		in.FencingToken = &tok
	}
}

func recordsEqual(a, b Record) error {
	if a.HasTimestamp != b.HasTimestamp || (a.HasTimestamp && a.Timestamp != b.Timestamp) {
		return fmt.Errorf("timestamp %v/%d vs %v/%d", a.HasTimestamp, a.Timestamp, b.HasTimestamp, b.Timestamp)
	}
	if len(a.Headers) != len(b.Headers) {
		return fmt.Errorf("%d headers vs %d", len(a.Headers), len(b.Headers))
	}
	for i := range a.Headers {
		if !bytes.Equal(a.Headers[i].Name, b.Headers[i].Name) || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return fmt.Errorf("header %d differs", i)
		}
	}
	if !bytes.Equal(a.Body, b.Body) {
		return fmt.Errorf("body differs (%d vs %d bytes)", len(a.Body), len(b.Body))
	}
	return nil
}

// checkBatch compares a decoded batch with the appends it was encoded from, iterating with
// the given skip set.
func checkBatch(t testing.TB, b *Object, ins []AppendInput, skip map[int]bool) {
	t.Helper()
	if b.NumAppends() != len(ins) {
		t.Fatalf("NumAppends %d, want %d", b.NumAppends(), len(ins))
	}
	total := 0
	var want []Record
	var wantApp []int
	for i := range ins {
		m := b.Append(i)
		in := &ins[i]
		if m.RecordCount != len(in.Records) || m.FirstRecord != total || m.MeteredBytes != in.MeteredSize() {
			t.Fatalf("append %d meta %+v, want count %d first %d metered %d", i, m, len(in.Records), total, in.MeteredSize())
		}
		if (m.MatchSeqNum == nil) != (in.MatchSeqNum == nil) || (m.MatchSeqNum != nil && *m.MatchSeqNum != *in.MatchSeqNum) {
			t.Fatalf("append %d match_seq_num %v, want %v", i, m.MatchSeqNum, in.MatchSeqNum)
		}
		if (m.FencingToken == nil) != (in.FencingToken == nil) || (m.FencingToken != nil && *m.FencingToken != *in.FencingToken) {
			t.Fatalf("append %d fencing token %v, want %v", i, m.FencingToken, in.FencingToken)
		}
		total += len(in.Records)
		if !skip[i] {
			want = append(want, in.Records...)
			for range in.Records {
				wantApp = append(wantApp, i)
			}
		}
	}
	if b.NumRecords() != total {
		t.Fatalf("NumRecords %d, want %d", b.NumRecords(), total)
	}
	it := b.Iter(func(i int) bool { return skip[i] })
	n := 0
	for it.Next() {
		if n >= len(want) {
			t.Fatalf("more records than the %d expected", len(want))
		}
		if err := recordsEqual(*it.Record(), want[n]); err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		if it.AppendIndex() != wantApp[n] {
			t.Fatalf("record %d: append index %d, want %d", n, it.AppendIndex(), wantApp[n])
		}
		n++
	}
	if it.Err() != nil {
		t.Fatalf("iteration: %v", it.Err())
	}
	if n != len(want) {
		t.Fatalf("iterated %d records, want %d", n, len(want))
	}
}

func encode(t testing.TB, c Compression, ins []AppendInput) []byte {
	t.Helper()
	e := NewEncoder(c)
	for i := range ins {
		if got := e.Add(&ins[i]); got != i {
			t.Fatalf("Add = %d, want %d: %v", got, i, e.Err())
		}
	}
	obj, err := e.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
