package batchfmt

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// TestObjectBuffer: an object read into an ObjectBuffer, in reads of any size and into a
// buffer sized right, too small or too large, decodes as Decode decodes its bytes, whole or
// damaged.
func TestObjectBuffer(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 5))
	readers := map[string]func(io.Reader) io.Reader{
		"whole":   func(r io.Reader) io.Reader { return r },
		"onebyte": iotest.OneByteReader,
		"half":    iotest.HalfReader,
		"dataerr": iotest.DataErrReader,
	}
	for i := range 40 {
		c := CompressionNone
		if i%4 == 3 {
			c = CompressionZstd
		}
		ins := make([]AppendInput, 1+r.IntN(4))
		for j := range ins {
			ins[j] = randAppend(r, false)
		}
		if i%10 == 0 { // past a few read chunks
			ins = append(ins, AppendInput{Records: []Record{{Body: randBytes(r, 3*readChunk+r.IntN(1000))}}})
		}
		obj := encode(t, c, ins)
		damaged := append([]byte(nil), obj...)
		damaged[r.IntN(len(damaged))] ^= 1 << r.IntN(8)
		for _, data := range [][]byte{obj, damaged, obj[:r.IntN(len(obj))]} {
			want, wantErr := Decode(data)
			for name, wrap := range readers {
				for _, size := range []int{0, len(data) / 2, len(data), 2 * len(data)} {
					b := NewObjectBuffer(size)
					if _, err := b.ReadFrom(wrap(bytes.NewReader(data))); err != nil {
						t.Fatalf("%s, size %d: ReadFrom: %v", name, size, err)
					}
					if !bytes.Equal(b.Bytes(), data) {
						t.Fatalf("%s, size %d: read %d bytes, want %d", name, size, len(b.Bytes()), len(data))
					}
					got, err := b.Decode()
					if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
						t.Fatalf("%s, size %d: Decode: %v, want %v", name, size, err, wantErr)
					}
					if err == nil && (got.NumRecords() != want.NumRecords() || got.MeteredBytes() != want.MeteredBytes()) {
						t.Fatalf("%s, size %d: decoded %d records of %d bytes, want %d of %d", name, size, got.NumRecords(), got.MeteredBytes(), want.NumRecords(), want.MeteredBytes())
					}
					if err == nil {
						checkBatch(t, got, ins, nil)
					}
				}
			}
		}
	}
}

// TestObjectBufferReadError: ReadFrom returns the reader's error.
func TestObjectBufferReadError(t *testing.T) {
	boom := errors.New("boom")
	b := NewObjectBuffer(100)
	if _, err := b.ReadFrom(iotest.TimeoutReader(iotest.OneByteReader(bytes.NewReader(make([]byte, 10))))); err == nil {
		t.Fatal("no error")
	}
	if _, err := NewObjectBuffer(0).ReadFrom(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("ReadFrom: %v, want %v", err, boom)
	}
}
