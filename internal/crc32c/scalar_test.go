package crc32c

import (
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
