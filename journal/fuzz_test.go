package journal

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode: decoding never panics, fails only with ErrCorrupt or ErrUnsupportedVersion,
// and whatever decodes re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	w, _ := Encode(Header{Kind: KindWindow, Journal: 1, Number: 2}, []Section{
		{Manifest: "a/manifest", FirstSeq: 1, NextSeq: 3, Data: []byte("xyz")},
		{Manifest: "b/manifest", Data: nil},
	})
	fence, _ := Encode(Header{Kind: KindFence, Journal: 1, Number: 3}, nil)
	f.Add(w)
	f.Add(fence)
	f.Add([]byte("SLJ1"))
	f.Fuzz(func(t *testing.T, obj []byte) {
		h, rows, data, err := decodeAll("k", obj)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error %v is neither corruption nor version", err)
			}
			return
		}
		secs := make([]Section, len(rows))
		for i, r := range rows {
			secs[i] = Section{Manifest: r.Manifest, Generation: r.Generation, FirstSeq: r.FirstSeq, NextSeq: r.NextSeq, Data: data[i]}
		}
		again, err := Encode(h, secs)
		if err != nil {
			t.Fatalf("a decoded object does not encode: %v", err)
		}
		if !bytes.Equal(again, obj) {
			t.Fatalf("decoded object re-encodes differently:\n%x\n%x", obj, again)
		}
	})
}
