package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// TestMulTable checks the byte-wise multiplication against mulModP, for random constants and
// registers and for the constants updateScalar's chains join with.
func TestMulTable(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Get(t), 5))
	for _, n := range []uint64{1, 3, 2048, 4096, 1 << 20, r.Uint64N(1 << 30)} {
		k := xPow8n(n)
		tab := newMulTable(k)
		for i := 0; i < 2000; i++ {
			reg := r.Uint32()
			if i < 32 {
				reg = 1 << i
			}
			if got, want := tab.mul(reg), mulModP(k, reg); got != want {
				t.Fatalf("n %d, reg %#x: mul %#x, mulModP %#x", n, reg, got, want)
			}
			if got, want := tab.mul(reg), Shift(reg, int(n)); got != want {
				t.Fatalf("n %d, reg %#x: mul %#x, Shift %#x", n, reg, got, want)
			}
		}
	}
}

// TestUpdateScalar checks the scalar path (three chains on arm64, hash/crc32 elsewhere)
// against hash/crc32 on every length around its chunk sizes and on long random inputs,
// from random initial values and offsets.
func TestUpdateScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Get(t), 6))
	buf := make([]byte, 1<<20+64)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	check := func(off, n int) {
		init := r.Uint32()
		if got, want := updateScalar(init, buf[off:off+n]), crc32.Update(init, table, buf[off:off+n]); got != want {
			t.Fatalf("updateScalar(%#x, %d bytes at %d) = %#x, want %#x", init, n, off, got, want)
		}
	}
	for _, base := range []int{0, 3 * 2048, 6 * 2048, 9 * 2048} {
		for d := -40; d <= 40; d++ {
			if n := base + d; n >= 0 {
				check(r.IntN(64), n)
			}
		}
	}
	for i := 0; i < 300; i++ {
		check(r.IntN(64), r.IntN(1<<20))
	}
}
