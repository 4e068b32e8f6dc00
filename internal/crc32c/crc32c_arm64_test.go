//go:build arm64 && !purego

package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// TestCRC32C3Registers checks that the three-chain path is taken here (so that
// TestUpdateScalar tests it; every arm64 server core, and qemu-aarch64, has the CRC32
// instructions) and checks crc32c3's three raw registers directly, at the chunk size
// updateScalar uses and at the smallest its comment allows.
func TestCRC32C3Registers(t *testing.T) {
	if !hasCRC3 {
		t.Fatal("no CRC32 instructions reported: TestUpdateScalar would compare hash/crc32 with itself")
	}
	p := make([]byte, 3*chunk3)
	for i := range p {
		p[i] = byte(i*7 + 3)
	}
	reg := uint32(0x12345678)
	a, b, c := crc32c3(reg, p, chunk3)
	raw := func(r uint32, q []byte) uint32 { return ^crc32.Update(^r, table, q) }
	if want := raw(reg, p[:chunk3]); a != want {
		t.Fatalf("a %#x want %#x", a, want)
	}
	if want := raw(0, p[chunk3:2*chunk3]); b != want {
		t.Fatalf("b %#x want %#x", b, want)
	}
	if want := raw(0, p[2*chunk3:]); c != want {
		t.Fatalf("c %#x want %#x", c, want)
	}
	// l = 16, the smallest the comment allows.
	a, b, c = crc32c3(reg, p[:48], 16)
	if a != raw(reg, p[:16]) || b != raw(0, p[16:32]) || c != raw(0, p[32:48]) {
		t.Fatal("l=16 mismatch")
	}
}

// TestUpdateScalar checks the three-chain scalar path against hash/crc32 on every length
// around its chunk sizes and on long random inputs, from random initial values and offsets.
// (Elsewhere updateScalar is hash/crc32 itself, so the test is arm64's alone.)
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
	for _, base := range []int{0, 3 * chunk3, 6 * chunk3, 9 * chunk3} {
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
