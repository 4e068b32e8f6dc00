// Package crc32c computes CRC-32C (Castagnoli) checksums, the checksum of sluice's batch
// objects and manifests, faster than hash/crc32 where the CPU allows.
//
// # Contract
//
// Checksum(p) equals crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)) and Update(crc, p)
// equals crc32.Update(crc, table, p) for every input, on every platform: only the speed
// differs. On amd64 CPUs with AVX-512 and VPCLMULQDQ, inputs of at least MinVectorLen bytes
// are folded 256 bytes at a time with carry-less multiplication (four 512-bit accumulators,
// then one, then a Barrett reduction; see crc32c_amd64.s), about twice the speed of the
// SSE4.2 CRC32 instruction the standard library uses. Inputs of 47 KiB and more go through
// a hybrid kernel that also runs the CRC32 instruction on three lanes beside the carry-less
// multiplications, which are bound by their own execution unit: 64 GB/s against 53 GB/s
// for folding alone and 25 GB/s for hash/crc32 on the development machine.
//
// On amd64 CPUs with VPCLMULQDQ and AVX2 but not AVX-512 (AMD Zen 3, Intel client cores from
// Alder Lake on), a carry-less multiplication covers half as many bytes, and folding alone
// would run no faster than hash/crc32 (27 GB/s on the development machine with AVX-512 turned
// off). That kernel folds half of each 256-byte block on 256-bit registers and checksums the
// other half with the CRC32 instruction beside it, joining each result to the data after it
// (fold_amd64.h): 50-55 GB/s there.
//
// Inputs shorter than MinVectorLen, and the last bytes of longer ones (fewer than 256, or
// fewer than 64 after the AVX-512 kernels), go to hash/crc32. Kernel names the kernel in
// use; both vector kernels also need PCLMULQDQ, SSE4.1, SSE4.2 and BMI2 (for batchfmt's).
//
// The purego build tag, or a CPU without those features, selects hash/crc32 alone.
package crc32c

import "hash/crc32"

// Size is the size of a CRC-32C checksum in bytes.
const Size = 4

// MinVectorLen is the shortest input handed to the vector kernels; shorter inputs gain
// nothing from them. (What is left of a longer input after the hybrid kernel's chunks goes
// to the folding kernel from 256 bytes on.)
const MinVectorLen = 1024

var table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C checksum of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Update returns the result of adding the bytes in p to crc.
func Update(crc uint32, p []byte) uint32 {
	if level != levelNone && len(p) >= MinVectorLen {
		reg := ^crc
		if n := len(p) / hybridChunk * hybridChunk; n > 0 && level == levelAVX512 {
			reg = updateHybrid(reg, p[:n])
			p = p[n:]
		}
		if len(p) >= 256 {
			var n int
			reg, n = updateVector(reg, p)
			p = p[n:]
		}
		crc = ^reg
	}
	return crc32.Update(crc, table, p)
}

// The vector kernels, from none to the widest.
const (
	levelNone = iota
	levelAVX2
	levelAVX512
)

// Vector reports whether this process uses a vector kernel for long inputs.
func Vector() bool { return level != levelNone }

// Kernel names the vector kernel this process uses: "avx512", "avx2" or "none" (hash/crc32
// alone). GODEBUG=cpu.avx512f=off selects the AVX2 kernel on a CPU with both, and adding
// cpu.avx2=off selects none, as golang.org/x/sys/cpu reads it. (x/sys/cpu has no switch for
// VPCLMULQDQ apart from AVX-512's: cpu.avx512vpclmulqdq=off leaves the AVX2 kernel.)
func Kernel() string {
	return kernelNames[level]
}

var kernelNames = [...]string{levelNone: "none", levelAVX2: "avx2", levelAVX512: "avx512"}
