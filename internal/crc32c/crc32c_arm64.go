//go:build arm64 && !purego

package crc32c

import (
	"hash/crc32"

	"golang.org/x/sys/cpu"
)

// On arm64, hash/crc32 runs the CRC32CX instruction in one chain, each step waiting for the
// last (two or three cycles on Neoverse and Apple cores, where one could issue every cycle).
// updateScalar runs three chains side by side over three adjacent chunks of chunk3 bytes
// and joins them with multiplications by precomputed powers of x: crc32c3 in
// crc32c_arm64.s. Tested under emulation (qemu-aarch64); its speed has not been measured on
// arm64 hardware.

// chunk3 is the length of each of the three chains' chunks.
const chunk3 = 2048

// hasCRC3 reports whether the CPU has the CRC32 instructions.
var hasCRC3 = cpu.ARM64.HasCRC32

// shift1 and shift2 advance a CRC register over chunk3 and 2·chunk3 zero bytes.
var shift1, shift2 = newMulTable(xPow8n(chunk3)), newMulTable(xPow8n(2 * chunk3))

// updateScalar is crc32.Update(crc, table, p), with three CRC32CX chains for inputs of three
// chunks and more.
func updateScalar(crc uint32, p []byte) uint32 {
	if !hasCRC3 || len(p) < 3*chunk3 {
		return crc32.Update(crc, table, p)
	}
	reg := ^crc
	for len(p) >= 3*chunk3 {
		a, b, c := crc32c3(reg, p[:3*chunk3], chunk3)
		reg = shift2.mul(a) ^ shift1.mul(b) ^ c
		p = p[3*chunk3:]
	}
	return crc32.Update(^reg, table, p)
}

// crc32c3 returns the CRC registers (not inverted) after p[:l] from reg, after p[l:2l] from
// zero and after p[2l:3l] from zero, computed side by side. l must be a positive multiple
// of 16 and len(p) at least 3l.
//
//go:noescape
func crc32c3(reg uint32, p []byte, l int) (a, b, c uint32)
