//go:build arm64 && !purego

package crc32c

import (
	"hash/crc32"
	"testing"
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
