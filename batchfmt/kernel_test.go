package batchfmt

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/crc32c"
)

// TestRecordKernelMatchesGo encodes the same random appends with the record kernel and with
// the portable path (heads and pieces, gathered and folded by crc32c.Folder) and requires
// the same bytes: escapes, command records, empty and long bodies, timestamps, and objects
// finished mid-way. Where the kernel is not built, both runs take the portable path.
func TestRecordKernelMatchesGo(t *testing.T) {
	seed := testSeed(t)
	t.Logf("record kernel: %v", recordKernel)
	r := rand.New(rand.NewPCG(seed, 11))
	kernelOn := recordKernel
	defer func() { recordKernel = kernelOn }()
	for round := 0; round < 60; round++ {
		var ins []AppendInput
		for a := 0; a < 1+r.IntN(5); a++ {
			in := randAppend(r, round%4 == 0)
			if r.IntN(2) == 0 { // sizes at the kernel's edges: 64-byte moves, 256-byte blocks
				edge := func() int { return max(0, []int{64, 256, 1024}[r.IntN(3)]*r.IntN(4)+r.IntN(3)-1) }
				for i := range in.Records {
					rec := &in.Records[i]
					if len(rec.Headers) == 1 && len(rec.Headers[0].Name) == 0 {
						continue // a command record's body is fixed by its command
					}
					rec.Body = randBytes(r, edge())
					if r.IntN(3) == 0 {
						rec.Body = randBytes(r, r.IntN(5000)) // long bodies, many blocks each
					}
					var h *Header
					var was Header
					if len(rec.Headers) > 0 && len(rec.Headers) < 10 {
						h = &rec.Headers[r.IntN(len(rec.Headers))]
						was = *h
						h.Name, h.Value = randBytes(r, 1+edge()), randBytes(r, edge())
					}
					if in.MeteredSize() > MaxAppendBytes { // keep the append valid
						rec.Body = nil
						if h != nil {
							*h = was
						}
					}
				}
			}
			ins = append(ins, in)
		}
		cut := r.IntN(len(ins) + 1) // Finish here too, then go on
		encode := func(kernel bool) (mid, full []byte) {
			recordKernel = kernel
			e := NewEncoder(CompressionNone)
			for i := range ins {
				if i == cut {
					obj, err := e.Finish()
					if err != nil {
						t.Fatal(err)
					}
					mid = bytes.Clone(obj)
				}
				if e.Add(&ins[i]) < 0 {
					t.Fatalf("round %d: append %d refused: %v", round, i, e.Err())
				}
			}
			obj, err := e.Finish()
			if err != nil {
				t.Fatal(err)
			}
			return mid, bytes.Clone(obj)
		}
		midK, fullK := encode(kernelOn)
		midG, fullG := encode(false)
		if !bytes.Equal(midK, midG) || !bytes.Equal(fullK, fullG) {
			t.Fatalf("round %d: the record kernel's object differs from the portable path's (%d vs %d bytes)", round, len(fullK), len(fullG))
		}
		b, err := decodeChecked(fullK)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		checkBatch(t, b, ins, nil)
	}
}

// TestRecordKernelStopsAtEnd hands the kernel frames whose sizes disagree with the records
// (as if a record changed after it was sized): it must report the mismatch and write
// nothing past the end it was given plus the documented slack.
func TestRecordKernelStopsAtEnd(t *testing.T) {
	if !recordKernel {
		t.Skip("no record kernel on this platform")
	}
	recs := []Record{
		{Headers: []Header{{Name: []byte("k"), Value: bytes.Repeat([]byte("v"), 300)}}, Body: bytes.Repeat([]byte("b"), 700)},
		{Body: bytes.Repeat([]byte("c"), 2000)},
	}
	for _, shrink := range []int{1, 2, 5, 100, 600, 1000} {
		var metas []recMeta
		wire := 0
		for i := range recs {
			m, w, cmd := recordSize(&recs[i])
			magic, varlen := frameLead(m, cmd, false)
			if i == len(recs)-1 {
				w -= shrink // the last record now "has" more bytes than its frame holds
			}
			metas = append(metas, recMeta{lead: uint32(magic), leadN: uint32(1 + varlen), wire: uint32(max(w, 4))})
			wire += int(metas[i].wire)
		}
		buf := bytes.Repeat([]byte{0xA5}, wire+kernelSlack+256)
		var f crc32c.Folder
		written, _ := encodeRecords(f.State(), &buf[0], 0, wire, recs, metas)
		if written != -1 {
			t.Fatalf("shrink %d: kernel wrote %d of %d bytes and reported no mismatch", shrink, written, wire)
		}
		for i := wire + kernelSlack; i < len(buf); i++ {
			if buf[i] != 0xA5 {
				t.Fatalf("shrink %d: byte %d past the end plus slack was written", shrink, i-wire)
			}
		}
	}
}
