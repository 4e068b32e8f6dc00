//go:build amd64 && !purego

package crc32c

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// level is the vector kernel this process uses: the widest that runs here (see runs).
var level = detectLevel()

// runs reports whether the CPU has what kernel l needs: AVX-512 (F, VL, BW) with VPCLMULQDQ
// for 512-bit registers, AVX2 with VPCLMULQDQ for 256-bit ones, AVX2 alone for the pclmul
// kernel (its VEX encoding and batchfmt's 256-bit copies need only AVX; asking for AVX2 keeps
// it to the CPUs it was written for, Haswell and later, Zen and later); all
// also PCLMULQDQ, SSE4.1 and SSE4.2 (the CRC32 instruction) for the reduction, and BMI2 for
// batchfmt's record kernels, which fold into a Folder's State.
func runs(l int) bool {
	base := cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE41 && cpu.X86.HasSSE42 && cpu.X86.HasBMI2
	switch l {
	case levelAVX512:
		return base && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VPCLMULQDQ
	case levelAVX2:
		return base && cpu.X86.HasAVX2 && hasVPCLMULQDQ()
	case levelPCLMUL:
		return base && cpu.X86.HasAVX2
	}
	return l == levelNone
}

func detectLevel() int {
	l := levelAVX512
	for !runs(l) {
		l--
	}
	return l
}

// hasVPCLMULQDQ reads the VPCLMULQDQ feature bit (CPUID leaf 7, ECX bit 10), which
// x/sys/cpu reports only together with AVX-512. The caller has checked AVX2, and so the OS's
// support for 256-bit registers.
func hasVPCLMULQDQ() bool {
	if max, _, _, _ := cpuid(0, 0); max < 7 {
		return false
	}
	_, _, ecx, _ := cpuid(7, 0)
	return ecx&(1<<10) != 0
}

//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// useClmul selects shiftClmul, which needs only the carry-less multiplication and the CRC32
// instruction.
var useClmul = cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42

// updateVectorZ folds p into crc, which is the running value already inverted (as the CRC32
// instruction keeps it), and returns the new running value: FOLDZ (fold_amd64.h), half of
// each 256-byte block on two 512-bit accumulators, half by the CRC32 instruction. len(p)
// must be a multiple of 256.
//
//go:noescape
func updateVectorZ(crc uint32, p []byte) uint32

// foldBlocks512 folds each 256-byte block of p into the four 512-bit accumulators acc (FOLD4,
// a Folder's State). len(p) must be a multiple of 256.
//
//go:noescape
func foldBlocks512(acc *[256]byte, p []byte)

// reduceBlock reduces the four 512-bit accumulators to the 32-bit running value (inverted, as
// updateVector's).
//
//go:noescape
func reduceBlock512(acc *[256]byte) uint32

// shiftClmul is Shift with carry-less multiplication: n's two low bits by the CRC32
// instruction over zero bytes, each higher set bit k by one multiplication by tab[k].
//
//go:noescape
func shiftClmul(reg uint32, n uint64, tab *[maxShiftBits]uint32) uint32

// updateVectorY, foldBlocksY and reduceBlockY are the AVX2 kernels (fold_amd64.h): the jobs
// of updateVector, foldBlocks and reduceBlock, with half of each block on 256-bit registers
// and half by the CRC32 instruction. updateVectorY takes a multiple of 256 bytes.
//
//go:noescape
func updateVectorY(crc uint32, p []byte) uint32

//go:noescape
func foldBlocksY(acc *[256]byte, p []byte)

//go:noescape
func reduceBlockY(acc *[256]byte) uint32

// updateVectorP, foldBlocksP and reduceBlockP are the pclmul kernels (FOLDP in
// fold_amd64.h): the AVX2 kernels' work with the 128-bit carry-less multiplication, for CPUs
// without VPCLMULQDQ. The state's layout is the AVX2 kernels'.
//
//go:noescape
func updateVectorP(crc uint32, p []byte) uint32

//go:noescape
func foldBlocksP(acc *[256]byte, p []byte)

//go:noescape
func reduceBlockP(acc *[256]byte) uint32

// updateVector folds p into crc, which is the running value already inverted (as the
// CRC32 instruction keeps it), and returns the new running value with the number of bytes
// folded: all of p but its last len(p) % 256 bytes. len(p) must be at least 256.
func updateVector(crc uint32, p []byte) (uint32, int) {
	n := len(p) &^ 255
	switch level {
	case levelAVX512:
		return updateVectorZ(crc, p[:n]), n
	case levelAVX2:
		return updateVectorY(crc, p[:n]), n
	}
	return updateVectorP(crc, p[:n]), n
}

// foldBlocks folds each 256-byte block of p into acc, a Folder's State. len(p) must be a
// multiple of 256.
func foldBlocks(acc *[256]byte, p []byte) {
	switch level {
	case levelAVX512:
		foldBlocks512(acc, p)
	case levelAVX2:
		foldBlocksY(acc, p)
	default:
		foldBlocksP(acc, p)
	}
}

// reduceBlock reduces the accumulators to the 32-bit running value (inverted, as
// updateVector's).
func reduceBlock(acc *[256]byte) uint32 {
	switch level {
	case levelAVX512:
		return reduceBlock512(acc)
	case levelAVX2:
		return reduceBlockY(acc)
	}
	return reduceBlockP(acc)
}

// Kernels lists the kernels this CPU can run, widest first: some of "avx512", "avx2" and
// "pclmul", then "none".
func Kernels() []string {
	var names []string
	for l := levelAVX512; l >= levelNone; l-- {
		if runs(l) {
			names = append(names, kernelNames[l])
		}
	}
	return names
}

// SetKernel selects a kernel by its Kernel name, for tests and benchmarks that compare
// kernels, and returns a function that restores the one selected before. The kernel must be
// one Kernels lists. It must not be called while any checksum is being computed, and a
// Folder must be used from Reset to Sum under one kernel: their states differ (but for avx2
// and pclmul, which share one layout).
func SetKernel(name string) (restore func(), err error) {
	for l := levelAVX512; l >= levelNone; l-- {
		if kernelNames[l] == name && runs(l) {
			was := level
			level = l
			return func() { level = was }, nil
		}
	}
	return nil, fmt.Errorf("crc32c: kernel %q: this CPU runs %v", name, Kernels())
}
