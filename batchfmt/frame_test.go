package batchfmt

import (
	"math/rand/v2"
	"testing"
)

// TestPutFrameShortBuffer: putFrame writes exactly the size recordSize gives, and into any
// shorter buffer (a record that grew after it was sized) it reports !ok instead of writing
// past the end.
func TestPutFrameShortBuffer(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 3))
	for range 300 {
		rec := randRecord(r, false)
		_, w, _ := recordSize(&rec)
		full := make([]byte, w)
		if o, _, ok := putFrame(full, 0, &rec); !ok || o != w {
			t.Fatalf("putFrame into %d bytes: offset %d, ok %v", w, o, ok)
		}
		for n := range w {
			if _, _, ok := putFrame(make([]byte, n), 0, &rec); ok {
				t.Fatalf("putFrame of a %d-byte frame into %d bytes reported ok", w, n)
			}
		}
	}
}
