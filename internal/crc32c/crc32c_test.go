package crc32c

import (
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
)

func TestMatchesStdlib(t *testing.T) { eachLevel(t, testMatchesStdlib) }

func testMatchesStdlib(t *testing.T) {
	seed := testseed.Get(t)
	t.Logf("vector kernel: %s", Kernel())
	r := rand.New(rand.NewPCG(seed, 1))
	buf := make([]byte, 1<<20+200)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	check := func(off, n int, init uint32) {
		t.Helper()
		p := buf[off : off+n]
		want := crc32.Update(init, table, p)
		if got := Update(init, p); got != want {
			t.Fatalf("Update(%#x, buf[%d:%d]) = %#x, want %#x", init, off, off+n, got, want)
		}
	}
	// Every length around the kernel's thresholds and block sizes, at several alignments.
	for n := 0; n <= 3*minVectorLen[levelPCLMUL]; n++ {
		check(n%61, n, 0)
	}
	for i := 0; i < 2000; i++ {
		check(r.IntN(200), r.IntN(1<<20), r.Uint32())
	}
	check(0, 1<<20, 0)
	if got, want := Checksum(buf), crc32.Checksum(buf, table); got != want {
		t.Fatalf("Checksum = %#x, want %#x", got, want)
	}
}

// TestBlockEdges runs lengths at and around multiples of the vector kernels' 256-byte
// blocks, small and large (where a kernel hands the rest over to hash/crc32), from random
// running values.
func TestBlockEdges(t *testing.T) { eachLevel(t, testBlockEdges) }

func testBlockEdges(t *testing.T) {
	seed := testseed.Get(t)
	t.Logf("vector kernel: %s", Kernel())
	r := rand.New(rand.NewPCG(seed, 5))
	const large = 188 * 256 // a long input
	buf := make([]byte, 3*large+1024)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, base := range []int{1024, 4096, large, 2 * large, 3 * large} {
		for _, d := range []int{-257, -256, -64, -1, 0, 1, 63, 64, 255, 256, 300, 1023, 1024} {
			n := base + d
			if n > len(buf) {
				continue
			}
			init := r.Uint32()
			if got, want := Update(init, buf[:n]), crc32.Update(init, table, buf[:n]); got != want {
				t.Fatalf("Update(%#x, %d bytes) = %#x, want %#x", init, n, got, want)
			}
		}
	}
}

// TestSplits checks that Update composes: a checksum taken in pieces equals one taken whole.
func TestSplits(t *testing.T) { eachLevel(t, testSplits) }

func testSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	want := crc32.Checksum(buf, table)
	for i := 0; i < 500; i++ {
		a := r.IntN(len(buf))
		b := a + r.IntN(len(buf)-a+1)
		got := Update(Update(Update(0, buf[:a]), buf[a:b]), buf[b:])
		if got != want {
			t.Fatalf("pieces [:%d][%d:%d][%d:] give %#x, want %#x", a, a, b, b, got, want)
		}
	}
}

// TestPatterns runs inputs that stress the carry-less arithmetic: all zeros, all ones, and
// single set bits.
func TestPatterns(t *testing.T) { eachLevel(t, testPatterns) }

func testPatterns(t *testing.T) {
	for _, n := range []int{MinVectorLen, 4096, 4096 + 64, 65536 + 320} {
		for _, fill := range []byte{0x00, 0xFF, 0x80, 0x01} {
			p := make([]byte, n)
			for i := range p {
				p[i] = fill
			}
			if got, want := Checksum(p), crc32.Checksum(p, table); got != want {
				t.Fatalf("n=%d fill=%#x: %#x, want %#x", n, fill, got, want)
			}
		}
		p := make([]byte, n)
		for bit := 0; bit < n*8; bit += 61 {
			p[bit/8] = 1 << (bit % 8)
			if got, want := Update(0xFFFFFFFF, p), crc32.Update(0xFFFFFFFF, table, p); got != want {
				t.Fatalf("n=%d bit %d: %#x, want %#x", n, bit, got, want)
			}
			p[bit/8] = 0
		}
	}
}

// TestConstants derives the kernel's constants from the polynomial (see crc32c_amd64.s).
func TestConstants(t *testing.T) {
	const poly = 0x1EDC6F41 // Castagnoli, normal form without x^32
	xnmod := func(n int) uint32 {
		r := uint32(1)
		for i := 0; i < n; i++ {
			top := r & 0x80000000
			r <<= 1
			if top != 0 {
				r ^= poly
			}
		}
		return r
	}
	k := func(n int) uint64 { return uint64(bits.Reverse32(xnmod(n))) << 1 }
	for _, c := range []struct {
		name string
		got  uint64
		want uint64
	}{
		{"k2048 lo", k(2048 + 32), 0xdcb17aa4},
		{"k2048 hi", k(2048 - 32), 0xb9e02b86},
		{"k512 lo", k(512 + 32), 0x740eef02},
		{"k512 hi", k(512 - 32), 0x9e4addf8},
		{"k128 lo", k(128 + 32), 0xf20c0dfe},
		{"k128 hi", k(128 - 32), 0x14cd00bd6},
		{"k64", k(64), 0xdd45aab8},
		{"P", uint64(bits.Reverse32(poly))<<1 | 1, 0x105ec76f1},
		{"mu", barrettMu(), 0xdea713f1},
		{"k1024 lo", k(1024 + 32), 0x6992cea2},
		{"k1024 hi", k(1024 - 32), 0x0d3b6092},
	} {
		if c.got != c.want {
			t.Errorf("%s: derived %#x, the kernel has %#x", c.name, c.got, c.want)
		}
	}
}

// barrettMu returns mu = floor(x^64 / P) for the Barrett reduction, bit-reflected over its
// 33 coefficients (x^32 in bit 0, x^0 in bit 32), by long division.
func barrettMu() uint64 {
	const p = 1<<32 | 0x1EDC6F41
	var q, rem uint64
	for i := 64; i >= 0; i-- { // bring down the coefficient of x^i: 1 for x^64, else 0
		rem <<= 1
		if i == 64 {
			rem |= 1
		}
		q <<= 1
		if rem&(1<<32) != 0 {
			rem ^= p
			q |= 1
		}
	}
	return bits.Reverse64(q) >> 31
}

func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), make([]byte, 2048))
	f.Add(uint32(0xdeadbeef), []byte("sluice"))
	f.Fuzz(func(t *testing.T, init uint32, p []byte) {
		if got, want := Update(init, p), crc32.Update(init, table, p); got != want {
			t.Fatalf("Update(%#x, %d bytes) = %#x, want %#x", init, len(p), got, want)
		}
	})
}

func BenchmarkChecksum(b *testing.B) { eachLevel(b, benchmarkChecksum) }

func benchmarkChecksum(b *testing.B) {
	for _, n := range []int{1 << 10, 16 << 10, 1 << 20} {
		p := make([]byte, n)
		b.Run(fmt.Sprintf("size=%dKiB/crc32c", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Checksum(p)
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/stdlib", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Checksum(p, table)
			}
		})
	}
}
