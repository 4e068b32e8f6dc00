package batchfmt

import (
	"bytes"
	"errors"
	"testing"
)

func TestSmokeRoundTrip(t *testing.T) {
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		seq := uint64(7)
		tok := "tok"
		e := NewEncoder(c)
		if i := e.Add(&AppendInput{Records: []Record{{Body: []byte("a"), Timestamp: 5, HasTimestamp: true, Headers: []Header{{Name: []byte("n"), Value: []byte("v")}}}, FenceRecord("x")}, MatchSeqNum: &seq, FencingToken: &tok}); i != 0 {
			t.Fatalf("Add = %d, err %v", i, e.Err())
		}
		if i := e.Add(&AppendInput{Records: []Record{{Body: bytes.Repeat([]byte("b"), 70000)}}}); i != 1 {
			t.Fatalf("Add = %d, err %v", i, e.Err())
		}
		obj, err := e.Finish()
		if err != nil {
			t.Fatal(err)
		}
		b, err := Decode(obj)
		if err != nil {
			t.Fatal(err)
		}
		if b.NumAppends() != 2 || b.NumRecords() != 3 || *b.Append(0).MatchSeqNum != 7 || *b.Append(0).FencingToken != "tok" || b.Append(1).FirstRecord != 2 {
			t.Fatalf("meta %+v %+v", b.Append(0), b.Append(1))
		}
		it := b.Iter(nil)
		n := 0
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != 3 {
			t.Fatal(n, it.Err())
		}
		obj[len(obj)/2] ^= 1
		if _, err := Decode(obj); !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
	}
}
