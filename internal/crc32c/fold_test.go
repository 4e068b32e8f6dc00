package crc32c

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// TestFolder feeds random streams to a Folder in random pieces (folded in place, or gathered
// and folded) and checks Sum against hash/crc32 over the same bytes, and each copy.
func TestFolder(t *testing.T) { eachLevel(t, testFolder) }

func testFolder(t *testing.T) {
	seed := testseed.Get(t)
	t.Logf("vector kernel: %s", Kernel())
	r := rand.New(rand.NewPCG(seed, 2))
	for round := 0; round < 300; round++ {
		size := r.IntN(64 << 10)
		if round%10 == 0 {
			size = r.IntN(300)
		}
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := make([]byte, size)
		var f Folder
		if round%3 == 0 {
			f.Reset() // a used-looking Folder must behave as new after Reset
		}
		off := 0
		for off+BlockSize <= size && r.IntN(20) != 0 {
			n := r.IntN((size-off)/BlockSize+1) * BlockSize
			if r.IntN(2) == 0 {
				copy(dst[off:off+n], src[off:off+n])
				f.Blocks(dst[off : off+n])
			} else {
				extra := r.IntN(BlockSize) // a ragged end: only whole blocks are folded
				end := min(off+n+extra, size)
				if got := f.Gather(dst[off:end], 0, [][]byte{src[off:end]}); got != (end-off)&^(BlockSize-1) {
					t.Fatalf("round %d: Gather folded %d of %d", round, got, end-off)
				} else {
					n = got
				}
			}
			off += n
			if f.Len() != off {
				t.Fatalf("round %d: Len %d, want %d", round, f.Len(), off)
			}
		}
		copy(dst[off:], src[off:])
		if !bytes.Equal(dst, src) {
			t.Fatalf("round %d: copies differ from the source", round)
		}
		want := crc32.Checksum(src, table)
		if got := f.Sum(dst[off:]); got != want {
			t.Fatalf("round %d: %d bytes, %d folded: Sum %#x, want %#x", round, size, off, got, want)
		}
		if got := f.Sum(dst[off:]); got != want {
			t.Fatalf("round %d: a second Sum differs", round)
		}
	}
}

func TestFolderRejectsPartialBlocks(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Blocks of 65 bytes did not panic")
		}
	}()
	var f Folder
	f.Blocks(make([]byte, 65))
}

func TestCombine(t *testing.T) { eachLevel(t, testCombine) }

func testCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for i := 0; i < 500; i++ {
		a := r.IntN(len(buf))
		b := a + r.IntN(len(buf)-a+1)
		if i < 20 {
			b = a + i // short second parts, including empty
		}
		want := crc32.Checksum(buf[:b], table)
		got := Combine(crc32.Checksum(buf[:a], table), crc32.Checksum(buf[a:b], table), b-a)
		if got != want {
			t.Fatalf("Combine at %d of %d: %#x, want %#x", a, b, got, want)
		}
	}
}

// TestFolderGather builds streams the way the batch encoder does: some bytes written ahead
// (not yet folded), then pieces of random lengths gathered behind them, call after call,
// each call starting at the first unfolded byte. It checks the copy, that nothing past the
// pieces is written, the count folded, and Sum and SumAfter against hash/crc32.
func TestFolderGather(t *testing.T) { eachLevel(t, testFolderGather) }

func testFolderGather(t *testing.T) {
	seed := testseed.Get(t)
	t.Logf("vector kernel: %s", Kernel())
	r := rand.New(rand.NewPCG(seed, 4))
	pieceLen := func() int {
		switch r.IntN(6) {
		case 0:
			return r.IntN(64) // the masked tail alone, empty included
		case 1:
			return 64 * r.IntN(9) // whole vectors
		case 2:
			return 256*r.IntN(5) + r.IntN(3) - 1 + 1 // around block multiples
		case 3:
			return r.IntN(4 << 10)
		default:
			return r.IntN(300)
		}
	}
	for round := 0; round < 400; round++ {
		var f Folder
		var want []byte // the stream so far
		buf := make([]byte, 0, 1<<20)
		folded := 0
		for call := 0; call < 1+r.IntN(8); call++ {
			// Bytes written directly, ahead of the pieces.
			for n := r.IntN(40); n > 0; n-- {
				buf = append(buf, byte(r.Uint32()))
			}
			var pieces [][]byte
			total := 0
			for n := r.IntN(30); n >= 0; n-- {
				p := make([]byte, pieceLen())
				for i := range p {
					p[i] = byte(r.Uint32())
				}
				pieces = append(pieces, p)
				total += len(p)
			}
			w := len(buf) - folded
			start := len(buf)
			// Guard bytes past the pieces' end must survive.
			buf = buf[:start+total+64]
			for i := start + total; i < len(buf); i++ {
				buf[i] = 0xA5
			}
			got := f.Gather(buf[folded:start+total], w, pieces)
			for i := start + total; i < len(buf); i++ {
				if buf[i] != 0xA5 {
					t.Fatalf("round %d call %d: byte %d past the pieces' end was written", round, call, i-start-total)
				}
			}
			buf = buf[:start+total]
			if want := (len(buf) - folded) &^ (BlockSize - 1); got != want {
				t.Fatalf("round %d call %d: folded %d, want %d", round, call, got, want)
			}
			folded += got
			if f.Len() != folded {
				t.Fatalf("round %d call %d: Len %d, want %d", round, call, f.Len(), folded)
			}
			want = append(want, buf[len(want):start]...) // the bytes written directly
			for _, p := range pieces {
				want = append(want, p...)
			}
			if !bytes.Equal(buf, want) {
				t.Fatalf("round %d call %d: gathered bytes differ", round, call)
			}
		}
		if got, w := f.Sum(buf[folded:]), crc32.Checksum(want, table); got != w {
			t.Fatalf("round %d: %d bytes, %d folded: Sum %#x, want %#x", round, len(want), folded, got, w)
		}
		prefix := []byte(fmt.Sprint("prefix", round))
		whole := append(append([]byte(nil), prefix...), want...)
		if got, w := f.SumAfter(crc32.Checksum(prefix, table), buf[folded:]), crc32.Checksum(whole, table); got != w {
			t.Fatalf("round %d: SumAfter %#x, want %#x", round, got, w)
		}
	}
}

func TestFolderGatherRejectsShortDst(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Gather into a short dst did not panic")
		}
	}()
	var f Folder
	f.Gather(make([]byte, 10), 5, [][]byte{make([]byte, 6)})
}

// TestShift checks Shift against the bitwise multiplication, on random registers and
// distances (every low-bit pattern, and up to 2^40-1), and Raw against a patched checksum.
func TestShift(t *testing.T) { eachLevel(t, testShift) }

func testShift(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 20000; i++ {
		reg := r.Uint32()
		n := r.IntN(1 << (1 + r.IntN(maxShiftBits-1)))
		if i < 64 {
			n = i
		}
		if got, want := Shift(reg, n), mulModP(xPow8n(uint64(n)), reg); got != want {
			t.Fatalf("Shift(%#x, %d) = %#x, want %#x", reg, n, got, want)
		}
	}
	for i := 0; i < 200; i++ {
		m := make([]byte, 1+r.IntN(5000))
		for j := range m {
			m[j] = byte(r.Uint32())
		}
		p := r.IntN(len(m))
		d := make([]byte, 1+r.IntN(min(12, len(m)-p)))
		for j := range d {
			d[j] = byte(r.Uint32())
		}
		before := Checksum(m)
		for j := range d {
			m[p+j] ^= d[j]
		}
		if got, want := before^Shift(Raw(d), len(m)-p-len(d)), Checksum(m); got != want {
			t.Fatalf("patch of %d bytes at %d in %d: %#x, want %#x", len(d), p, len(m), got, want)
		}
	}
}

func BenchmarkShift(b *testing.B) {
	reg := uint32(0x12345678)
	for b.Loop() {
		reg = Shift(reg, 1<<20+12345)
	}
}
