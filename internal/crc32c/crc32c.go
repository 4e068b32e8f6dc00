// Package crc32c computes CRC-32C (Castagnoli) checksums, the checksum of sluice's batch
// objects and manifests, faster than hash/crc32 where the CPU allows.
//
// # Contract
//
// Checksum(p) equals crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)) and Update(crc, p)
// equals crc32.Update(crc, table, p) for every input, on every platform: only the speed
// differs. On amd64 CPUs with AVX-512 and VPCLMULQDQ, inputs of at least MinVectorLen bytes
// are folded 256 bytes at a time. VPCLMULQDQ issues once every other cycle on the development
// machine (an AMD Zen 5), on 512-bit registers as on 256-bit ones, so folding alone takes 16
// bytes per cycle, and so does the SSE4.2 CRC32 instruction on other execution units. The
// kernel (FOLDZ in fold_amd64.h) folds half of each block on two 512-bit accumulators and
// checksums the other half with the CRC32 instruction beside them, joining each result to
// the data after it: 86 GB/s over 1 MiB and 90 over 16 KiB, against 76 and 53 for the
// kernels it replaced (four accumulators; over long inputs, with three CRC32 lanes beside
// them) and 25 for hash/crc32. A Folder keeps the four-accumulator layout (FOLD4), which
// batchfmt's record kernel folds into while it writes: there, reading the just-written bytes
// back costs more than the multiplications, and FOLDZ measured no faster.
//
// On amd64 CPUs with VPCLMULQDQ and AVX2 but not AVX-512 (AMD Zen 3, Intel client cores from
// Alder Lake on), a carry-less multiplication covers half as many bytes, and folding alone
// would run no faster than hash/crc32 (27 GB/s on the development machine with AVX-512 turned
// off). That kernel folds half of each 256-byte block on 256-bit registers and checksums the
// other half with the CRC32 instruction beside it, joining each result to the data after it
// (fold_amd64.h): 50-55 GB/s there.
//
// On amd64 CPUs with AVX2 and PCLMULQDQ but not VPCLMULQDQ (Intel from Haswell to Cascade
// Lake, among them most of the cloud's Skylake and Cascade Lake servers; AMD Zen 1 and 2),
// the pclmul kernel does the AVX2 kernel's work with the 128-bit carry-less multiplication
// (FOLDP in fold_amd64.h), half of each block beside the CRC32 instruction's half. Where
// the multiplication issues once a cycle (Intel from Broadwell to Cascade Lake, by published
// instruction tables), that is up to twice hash/crc32's speed; not measured, as no such CPU
// was at hand. Where it issues every other cycle (Haswell and AMD Zen 1 and 2 by those
// tables, and the development machine), it runs at about hash/crc32's speed (on the
// development machine, pinned to one vCPU, 27 against 25 GB/s over 1 MiB in two runs; at
// other times both ran at 19-21), and what it gains is batchfmt's record kernel for such
// CPUs, which folds while it copies.
//
// Inputs shorter than MinVectorLen (4 KiB for the pclmul kernel), and the last bytes of
// longer ones (fewer than 256), go to hash/crc32. Kernel names the kernel in use; every
// vector kernel also needs PCLMULQDQ, SSE4.1, SSE4.2 and BMI2 (for batchfmt's), and the
// AVX2 and pclmul kernels AVX2.
//
// The purego build tag, or a CPU without those features, selects hash/crc32 alone, with one
// exception on arm64: there hash/crc32 runs the CRC32CX instruction in a single chain, each
// step waiting for the one before, so inputs of 6 KiB and more run three chains side by side
// over adjacent 2 KiB chunks, joined by table-driven multiplications (crc32c_arm64.go). That
// path is tested under emulation (qemu-aarch64) only; no arm64 machine was at hand to
// measure it (by the instruction's published latency and issue rate, up to two to three
// times hash/crc32 on Neoverse and Apple cores).
package crc32c

import (
	"hash/crc32"
	"math"
)

// Size is the size of a CRC-32C checksum in bytes.
const Size = 4

// MinVectorLen is the shortest input handed to the AVX-512 and AVX2 kernels; shorter inputs
// gain nothing from them. The pclmul kernel takes inputs of 4 KiB and more: its reduction,
// on 128-bit registers, costs about as much as hash/crc32 takes over 1 KiB.
const MinVectorLen = 1024

// minVectorLen is the shortest input Update hands to each level's kernel.
var minVectorLen = [...]int{levelNone: math.MaxInt, levelPCLMUL: 4096, levelAVX2: MinVectorLen, levelAVX512: MinVectorLen}

var table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C checksum of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Update returns the result of adding the bytes in p to crc.
func Update(crc uint32, p []byte) uint32 {
	if len(p) >= minVectorLen[level] {
		reg, n := updateVector(^crc, p)
		crc, p = ^reg, p[n:]
	}
	return updateScalar(crc, p)
}

// The vector kernels, from none to the widest.
const (
	levelNone = iota
	levelPCLMUL
	levelAVX2
	levelAVX512
)

// Vector reports whether this process uses a vector kernel for long inputs.
func Vector() bool { return level != levelNone }

// Kernel names the vector kernel this process uses: "avx512", "avx2", "pclmul" or "none"
// (hash/crc32 alone). GODEBUG=cpu.avx512f=off selects the AVX2 kernel on a CPU with both,
// and adding cpu.avx2=off selects none, as golang.org/x/sys/cpu reads it. (x/sys/cpu has no
// switch for VPCLMULQDQ apart from AVX-512's: cpu.avx512vpclmulqdq=off leaves the AVX2
// kernel, and only SetKernel selects the pclmul kernel on a CPU with VPCLMULQDQ.)
func Kernel() string {
	return kernelNames[level]
}

var kernelNames = [...]string{levelNone: "none", levelPCLMUL: "pclmul", levelAVX2: "avx2", levelAVX512: "avx512"}
