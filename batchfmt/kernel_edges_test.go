package batchfmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/crc32c"
)

// checkTrailer checks an uncompressed object's trailer against hash/crc32 directly.
func checkTrailer(t *testing.T, what string, obj []byte) {
	t.Helper()
	body := obj[:len(obj)-TrailerSize]
	want := crc32.Checksum(body, castagnoli)
	if got := binary.BigEndian.Uint32(obj[len(obj)-TrailerSize:]); got != want {
		t.Fatalf("%s: trailer %08x, hash/crc32 %08x", what, got, want)
	}
}

// pieceLen returns a random length for a name, value or body, weighted to the kernels' edges:
// short tails, whole and partial 64-byte moves, 256-byte blocks and long pieces.
func pieceLen(r *rand.Rand) int {
	switch r.IntN(6) {
	case 0:
		return r.IntN(4)
	case 1:
		return r.IntN(64)
	case 2:
		return 64 + r.IntN(192)
	case 3:
		return 256*r.IntN(4) + r.IntN(70)
	case 4:
		return r.IntN(3000)
	}
	return r.IntN(40)
}

// withLength returns name, value and body with the one field numbers (0 name, 1 value, 2
// body, 3 all three) made n bytes long by piece (a name at least 1), the others as given.
func withLength(field, n int, piece func(int) []byte, name, value, body []byte) ([]byte, []byte, []byte) {
	if field == 0 || field == 3 {
		name = piece(max(n, 1))
	}
	if field == 1 || field == 3 {
		value = piece(n)
	}
	if field == 2 || field == 3 {
		body = piece(n)
	}
	return name, value, body
}

// TestRecordKernelEveryLength encodes one record whose name, value or body has each length
// from 0 to 600 (with the others small), with every kernel, against the portable path and
// hash/crc32; the pieces end at an unaligned address.
func TestRecordKernelEveryLength(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		seed := testSeed(t)
		r := rand.New(rand.NewPCG(seed, 98))
		src := randBytes(r, 4096)
		for field := 0; field < 3; field++ {
			for n := 0; n <= 600; n++ {
				piece := func(m int) []byte { o := r.IntN(64); return src[o : o+m : o+m] }
				name, value, body := withLength(field, n, piece, piece(1+r.IntN(3)), piece(r.IntN(4)), piece(r.IntN(4)))
				in := AppendInput{Records: []Record{{Headers: []Header{{Name: name, Value: value}}, Body: body}, {Body: piece(n)}}}
				objs := encodeBothWays(t, in)
				if !bytes.Equal(objs[0], objs[1]) {
					t.Fatalf("field %d len %d: kernel's object differs", field, n)
				}
				checkTrailer(t, fmt.Sprintf("field %d len %d", field, n), objs[0])
			}
		}
	})
}

// TestEncodeRecordsDirect calls encodeRecords on every kernel with random unfolded
// prefixes dst[:w] and random records, in both modes, and checks the Folder's sum of what
// was written against hash/crc32, the frames against the portable heads and bodies, and
// that nothing past end (plus kernelSlack for AVX-512; nothing at all for AVX2, as
// encode_avx2_amd64.s says) was written.
// portableFrames returns the frames of recs as the portable path writes them (appendHead, then
// the body), which every record kernel must write byte for byte.
func portableFrames(recs []Record) []byte {
	var frames []byte
	for i := range recs {
		m, w, cmd := recordSize(&recs[i])
		frames = appendHead(frames, &recs[i], m, w-len(recs[i].Body), cmd)
		frames = append(frames, recs[i].Body...)
	}
	return frames
}

func TestEncodeRecordsDirect(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		if !recordKernel {
			t.Skip()
		}
		seed := testSeed(t)
		r := rand.New(rand.NewPCG(seed, 97))
		for round := 0; round < 400; round++ {
			var recs []Record
			for i := 1 + r.IntN(40); i > 0; i-- {
				var rec Record
				if r.IntN(2) == 0 {
					rec.HasTimestamp, rec.Timestamp = true, r.Uint64()
				}
				for h := r.IntN(3); h > 0; h-- {
					rec.Headers = append(rec.Headers, Header{Name: randBytes(r, 1+pieceLen(r)), Value: randBytes(r, pieceLen(r))})
				}
				rec.Body = randBytes(r, pieceLen(r))
				recs = append(recs, rec)
			}
			want := portableFrames(recs)
			metas, wire := kernelMetas(recs)
			if wire != len(want) {
				t.Fatalf("wire %d, frames %d", wire, len(want))
			}
			w := r.IntN(600)
			for _, mode := range []string{"metas", "sizing"} {
				buf := make([]byte, w+wire+kernelSlack+64)
				for i := range buf {
					buf[i] = 0xA5
				}
				for i := 0; i < w; i++ {
					buf[i] = byte(r.Uint32())
				}
				var f crc32c.Folder
				ms := metas
				end := w + wire
				if mode == "sizing" {
					ms = nil
					end = w + wire + r.IntN(50)
				}
				written, folded, _, done := encodeRecords(f.State(), &buf[0], w, end, recs, ms)
				if written != w+wire || (mode == "sizing" && done != len(recs)) {
					t.Fatalf("round %d %s: written %d done %d, want %d", round, mode, written, done, w+wire)
				}
				if folded != written&^255 {
					t.Fatalf("round %d %s: folded %d of %d", round, mode, folded, written)
				}
				if !bytes.Equal(buf[w:written], want) {
					t.Fatalf("round %d %s: frames differ", round, mode)
				}
				f.Advance(folded)
				if got, wantSum := f.Sum(buf[folded:written]), crc32.Checksum(buf[:written], castagnoli); got != wantSum {
					t.Fatalf("round %d %s (w %d, %d bytes): Folder sum %08x, hash/crc32 %08x", round, mode, w, written, got, wantSum)
				}
				slack := kernelSlackInUse()
				for i := written + slack; i < len(buf); i++ {
					if buf[i] != 0xA5 {
						t.Fatalf("round %d %s: byte %d past the end written", round, mode, i-written)
					}
				}
			}
		}
	})
}

// TestRecordKernelStopLeavesState: with a non-empty checksum state, the kernel stopping at a
// command record (sizing mode) must leave the state as it was.
func TestRecordKernelStopLeavesState(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		if !recordKernel {
			t.Skip()
		}
		seed := testSeed(t)
		r := rand.New(rand.NewPCG(seed, 96))
		for round := 0; round < 100; round++ {
			var f crc32c.Folder
			f.Blocks(randBytes(r, 256*(1+r.IntN(10))))
			before := *f.State()
			var recs []Record
			for i := 0; i < 3+r.IntN(10); i++ {
				recs = append(recs, Record{Headers: []Header{{Name: randBytes(r, 1+r.IntN(10)), Value: randBytes(r, r.IntN(100))}}, Body: randBytes(r, r.IntN(3000))})
			}
			recs = append(recs, FenceRecord("x"))
			buf := make([]byte, 1<<20)
			written, folded, _, done := encodeRecords(f.State(), &buf[0], r.IntN(300), len(buf)-kernelSlack, recs, nil)
			if done != len(recs)-1 || folded != 0 {
				t.Fatalf("stop: done %d folded %d written %d", done, folded, written)
			}
			if *f.State() != before {
				t.Fatalf("round %d: state changed by a kernel that stopped", round)
			}
		}
	})
}
