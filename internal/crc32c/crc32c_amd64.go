//go:build amd64 && !purego

package crc32c

import "golang.org/x/sys/cpu"

// useVector selects the kernels below. SSE4.2 is for the CRC32 instruction of the hybrid
// kernel; AVX-512 BW and BMI2 are for batchfmt's record kernel, which folds into State.
var useVector = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VPCLMULQDQ &&
	cpu.X86.HasPCLMULQDQ && cpu.X86.HasBMI2 && cpu.X86.HasSSE42

// useClmul selects shiftClmul, which needs only the carry-less multiplication and the CRC32
// instruction.
var useClmul = cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42

// updateVector folds p into crc, which is the running value already inverted (as the
// CRC32 instruction keeps it), and returns the new running value. len(p) must be at least
// 256 and a multiple of 64.
//
//go:noescape
func updateVector(crc uint32, p []byte) uint32

// foldBlocks folds each 256-byte block of p into the four 512-bit accumulators acc. len(p) must be a
// multiple of 256.
//
//go:noescape
func foldBlocks(acc *[256]byte, p []byte)

// reduceBlock reduces the four 512-bit accumulators to the 32-bit running value (inverted, as
// updateVector's).
//
//go:noescape
func reduceBlock(acc *[256]byte) uint32

// hybridChunk is the unit of updateHybrid: 32 KiB folded by VPCLMULQDQ and three lanes of
// 5 KiB checksummed by the CRC32 instruction at the same time.
const hybridChunk = 32768 + 3*5120

// updateHybrid is updateVector with the CRC32 instruction working beside the carry-less
// multiplications, for long inputs; len(p) must be a multiple of hybridChunk.
//
//go:noescape
func updateHybrid(crc uint32, p []byte) uint32

// shiftClmul is Shift with carry-less multiplication: n's two low bits by the CRC32
// instruction over zero bytes, each higher set bit k by one multiplication by tab[k].
//
//go:noescape
func shiftClmul(reg uint32, n uint64, tab *[maxShiftBits]uint32) uint32
