//go:build amd64 && !purego

#include "textflag.h"

// CRC-32C by folding with carry-less multiplication, after Intel's "Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction" (2009), widened to AVX-512.
//
// Each fold constant pair is, for a fold distance of D bits, x^(D+32) mod P (low qword) and
// x^(D-32) mod P (high qword), bit-reflected and shifted left by one; TestConstants
// (crc32c_test.go) derives every constant below from the polynomial and checks it.

// Fold by 2048 bits (k2048): FOLD4's four 512-bit accumulators and FOLDZ's two, each over
// 256 bytes per step.
#include "fold_amd64.h"

// Fold by 512 bits: one 512-bit accumulator, 64 bytes per step.
DATA k512<>+0(SB)/8, $0x740eef02
DATA k512<>+8(SB)/8, $0x9e4addf8
DATA k512<>+16(SB)/8, $0x740eef02
DATA k512<>+24(SB)/8, $0x9e4addf8
DATA k512<>+32(SB)/8, $0x740eef02
DATA k512<>+40(SB)/8, $0x9e4addf8
DATA k512<>+48(SB)/8, $0x740eef02
DATA k512<>+56(SB)/8, $0x9e4addf8
GLOBL k512<>(SB), RODATA|NOPTR, $64

// Fold by 1024 bits: FOLDZ's first accumulator into its second.
DATA k1024<>+0(SB)/8, $0x6992cea2
DATA k1024<>+8(SB)/8, $0x0d3b6092
DATA k1024<>+16(SB)/8, $0x6992cea2
DATA k1024<>+24(SB)/8, $0x0d3b6092
DATA k1024<>+32(SB)/8, $0x6992cea2
DATA k1024<>+40(SB)/8, $0x0d3b6092
DATA k1024<>+48(SB)/8, $0x6992cea2
DATA k1024<>+56(SB)/8, $0x0d3b6092
GLOBL k1024<>(SB), RODATA|NOPTR, $64

// Fold by 128 bits: one 128-bit lane into the next.
DATA k128<>+0(SB)/8, $0xf20c0dfe
DATA k128<>+8(SB)/8, $0x14cd00bd6
GLOBL k128<>(SB), RODATA|NOPTR, $16

// x^64 mod P, for the 96-to-64-bit step of the reduction.
DATA k64<>+0(SB)/8, $0xdd45aab8
GLOBL k64<>(SB), RODATA|NOPTR, $8

// Barrett reduction: P (reflected, with its x^32 term) and mu = floor(x^64 / P) (reflected).
DATA barrett<>+0(SB)/8, $0x105ec76f1
DATA barrett<>+8(SB)/8, $0xdea713f1
GLOBL barrett<>(SB), RODATA|NOPTR, $16

// REDUCE folds the four 128-bit lanes of Z4 into one, then reduces it to the 32-bit running
// value in AX (Intel's paper, steps 2 and 3; BARRETT below). It clobbers X0-X6 and clears
// the upper state.
#define REDUCE \
	VEXTRACTI32X4 $1, Z4, X2; \
	VEXTRACTI32X4 $2, Z4, X3; \
	VEXTRACTI32X4 $3, Z4, X6; \
	VMOVDQA       X4, X1; \
	VMOVDQU       k128<>(SB), X0; \
	VPCLMULQDQ    $0x11, X0, X1, X5; \
	VPCLMULQDQ    $0x00, X0, X1, X1; \
	VPTERNLOGD    $0x96, X5, X2, X1; \
	VPCLMULQDQ    $0x11, X0, X1, X5; \
	VPCLMULQDQ    $0x00, X0, X1, X1; \
	VPTERNLOGD    $0x96, X5, X3, X1; \
	VPCLMULQDQ    $0x11, X0, X1, X5; \
	VPCLMULQDQ    $0x00, X0, X1, X1; \
	VPTERNLOGD    $0x96, X5, X6, X1; \
	VZEROUPPER; \
	BARRETT

// BARRETT reduces the 128 bits in X1 to the 32-bit running value in AX (Intel's paper, step
// 3: 128 to 64 to 32 bits, then the Barrett reduction). It clobbers X0-X3.
#define BARRETT \
	PCMPEQB   X3, X3; \
	PCLMULQDQ $1, X1, X0; \
	PSRLDQ    $8, X1; \
	PXOR      X0, X1; \
	MOVOA X1, X2; \
	MOVQ  k64<>+0(SB), X0; \
	PSRLQ $32, X3; \
	PSRLDQ    $4, X2; \
	PAND      X3, X1; \
	PCLMULQDQ $0, X0, X1; \
	PXOR      X2, X1; \
	MOVOU barrett<>+0(SB), X0; \
	MOVOA     X1, X2; \
	PAND      X3, X1; \
	PCLMULQDQ $0x10, X0, X1; \
	PAND      X3, X1; \
	PCLMULQDQ $0, X0, X1; \
	PXOR      X2, X1; \
	PEXTRD $1, X1, AX;

// LOADACC and STOREACC move the four 512-bit accumulators Z1-Z4 from and to the state at DI.
#define LOADACC \
	VMOVDQU64 (DI), Z1; \
	VMOVDQU64 64(DI), Z2; \
	VMOVDQU64 128(DI), Z3; \
	VMOVDQU64 192(DI), Z4

#define STOREACC \
	VMOVDQU64 Z1, (DI); \
	VMOVDQU64 Z2, 64(DI); \
	VMOVDQU64 Z3, 128(DI); \
	VMOVDQU64 Z4, 192(DI)

// MERGE4 folds the four accumulators Z1-Z4 into Z4, each 512 bits into the next.
#define MERGE4 \
	VMOVDQU64  k512<>(SB), Z0; \
	VPCLMULQDQ $0x11, Z0, Z1, Z5; \
	VPCLMULQDQ $0x00, Z0, Z1, Z1; \
	VPTERNLOGD $0x96, Z5, Z1, Z2; \
	VPCLMULQDQ $0x11, Z0, Z2, Z5; \
	VPCLMULQDQ $0x00, Z0, Z2, Z2; \
	VPTERNLOGD $0x96, Z5, Z2, Z3; \
	VPCLMULQDQ $0x11, Z0, Z3, Z5; \
	VPCLMULQDQ $0x00, Z0, Z3, Z3; \
	VPTERNLOGD $0x96, Z5, Z3, Z4

// func foldBlocks512(acc *[256]byte, p []byte)
// len(p) % 256 == 0. acc holds four unreduced 512-bit accumulators; each 256-byte block of
// p is folded in, 64 bytes into each.
TEXT ·foldBlocks512(SB), NOSPLIT, $0-32
	MOVQ      acc+0(FP), DI
	MOVQ      p_base+8(FP), SI
	MOVQ      p_len+16(FP), CX
	LOADACC
	VMOVDQU64 k2048<>(SB), Z0
	CMPQ      CX, $256
	JB        foldDone

foldLoop:
	VMOVDQU64 (SI), Z11
	VMOVDQU64 64(SI), Z12
	VMOVDQU64 128(SI), Z13
	VMOVDQU64 192(SI), Z14
	FOLD4
	ADDQ      $256, SI
	SUBQ      $256, CX
	CMPQ      CX, $256
	JAE       foldLoop

foldDone:
	STOREACC
	VZEROUPPER
	RET

// func reduceBlock512(acc *[256]byte) uint32
// Folds the four accumulators into one, 512 bits into the next, and reduces it to the
// 32-bit running value.
TEXT ·reduceBlock512(SB), NOSPLIT, $0-12
	MOVQ       acc+0(FP), DI
	LOADACC
	MERGE4
	REDUCE
	MOVL       AX, ret+8(FP)
	RET

// REDUCEZ reduces a state in FOLDZ's layout (Z1, Z2, X3) to the 32-bit running value in AX:
// Z1 folds into Z2 by 1024 bits (the distance between their segments); Z2 then by 512 bits,
// past the 64 bytes of the last segment, which stand as zeros; REDUCE; and the last
// segment's own result joins. Clobbers X0-X6, R8 and the upper state.
#define REDUCEZ \
	VMOVD      X3, R8; \
	VMOVDQU64  k1024<>(SB), Z0; \
	VPCLMULQDQ $0x11, Z0, Z1, Z5; \
	VPCLMULQDQ $0x00, Z0, Z1, Z1; \
	VPTERNLOGD $0x96, Z5, Z1, Z2; \
	VMOVDQU64  k512<>(SB), Z0; \
	VPCLMULQDQ $0x11, Z0, Z2, Z5; \
	VPCLMULQDQ $0x00, Z0, Z2, Z4; \
	VPXORQ     Z5, Z4, Z4; \
	REDUCE; \
	XORL       R8, AX

// func updateVectorZ(crc uint32, p []byte) uint32
// updateVector with FOLDZ: len(p) a multiple of 256. The running value joins the first block
// as a CRC32 segment's result would.
TEXT ·updateVectorZ(SB), NOSPLIT, $0-36
	MOVL      crc+0(FP), AX
	MOVQ      p_base+8(FP), SI
	MOVQ      p_len+16(FP), CX
	VMOVD     AX, X3
	VPXORQ    Z1, Z1, Z1
	VPXORQ    Z2, Z2, Z2
	VMOVDQU64 k2048<>(SB), Z0
	TESTQ     CX, CX
	JZ        doneZ

loopZ:
	FOLDZ(SI)
	ADDQ $256, SI
	SUBQ $256, CX
	JNZ  loopZ

doneZ:
	REDUCEZ
	MOVL AX, ret+32(FP)
	RET

// func shiftClmul(reg uint32, n uint64, tab *[maxShiftBits]uint32) uint32
//
// reg·x^(8n) mod P, reflected. One and two zero bytes are the CRC32 instruction's own
// steps. For a higher set bit k of n, the carry-less product of reg and tab[k] =
// x^(8·2^k - 32), shifted left by one bit (so that it reads as a 64-bit reflected
// polynomial, bit 63 being x^0), is reduced by the CRC32 instruction from a zero register,
// which computes (that polynomial)·x^32 mod P: reg·x^(8·2^k) mod P.
TEXT ·shiftClmul(SB), NOSPLIT, $0-28
	MOVL  reg+0(FP), AX
	MOVQ  n+8(FP), CX
	MOVQ  tab+16(FP), SI
	XORL  DX, DX
	TESTQ $1, CX
	JZ    shift2
	CRC32B DL, AX

shift2:
	TESTQ $2, CX
	JZ    shiftHigh
	CRC32W DX, AX

shiftHigh:
	SHRQ $2, CX
	ADDQ $8, SI // tab[2]

shiftLoop:
	TESTQ CX, CX
	JZ    shiftDone
	TESTQ $1, CX
	JZ    shiftNext
	MOVQ      AX, X0
	MOVL      (SI), BX
	MOVQ      BX, X1
	PCLMULQDQ $0x00, X1, X0
	MOVQ      X0, BX
	SHLQ      $1, BX
	XORL      AX, AX
	CRC32Q    BX, AX

shiftNext:
	SHRQ $1, CX
	ADDQ $4, SI
	JMP  shiftLoop

shiftDone:
	MOVL AX, ret+24(FP)
	RET

// The AVX2 kernels (FOLDH in fold_amd64.h): half of each block folded on 256-bit registers,
// half checksummed by the CRC32 instruction beside it.

// FOLDY folds the 256-bit accumulator acc by the distance whose constant is in Y0 into
// next; Y9 is scratch.
#define FOLDY(acc, next) \
	VPCLMULQDQ $0x11, Y0, acc, Y9; \
	VPCLMULQDQ $0x00, Y0, acc, acc; \
	VPXOR      Y9, next, next; \
	VPXOR      acc, next, next

// FOLDX folds the 128 bits of X1 by 128 bits (constant in X0) into X1 and reg; X5 is
// scratch.
#define FOLDX(reg) \
	VPCLMULQDQ $0x11, X0, X1, X5; \
	VPCLMULQDQ $0x00, X0, X1, X1; \
	VPXOR      X5, reg, reg; \
	VPXOR      reg, X1, X1

// REDUCETAIL ends REDUCEH and REDUCEP, from the last segment's two lanes, X1 (low) and X2
// (high): X1 into X2 by 128 bits; that lane past the 32 bytes of the last segment, which
// stand as zeros; then BARRETT, and the last segment's own result (X14) joins. Clobbers
// X0-X5, R8 and the upper state.
#define REDUCETAIL \
	VMOVDQU k128<>(SB), X0; \
	FOLDX(X2); \
	VPXOR   X2, X2, X2; \
	FOLDX(X2); \
	VPXOR   X2, X2, X2; \
	FOLDX(X2); \
	VMOVD   X14, R8; \
	VZEROUPPER; \
	BARRETT; \
	XORL    R8, AX

// FOLDLOOP folds the CX bytes at SI (a multiple of 256), a block at a time, with FOLD;
// loop and done are labels of the caller's.
#define FOLDLOOP(FOLD, loop, done) \
	TESTQ CX, CX; \
	JZ    done; \
loop: \
	FOLD(SI); \
	ADDQ  $256, SI; \
	SUBQ  $256, CX; \
	JNZ   loop; \
done:

// REDUCEH reduces the state in Y1-Y4 and X14 to the 32-bit running value in AX: Y1 into Y2,
// Y3 and Y4 by 512 bits each (the 64-byte period of the folded segments); Y4's low lane into
// its high one; that lane past the 32 bytes of the last segment, which stand as zeros; then
// BARRETT, and the last segment's own result joins. Clobbers X0-X5, X9, R8 and the upper
// state.
#define REDUCEH \
	VMOVDQU      k512<>(SB), Y0; \
	FOLDY(Y1, Y2); \
	FOLDY(Y2, Y3); \
	FOLDY(Y3, Y4); \
	VEXTRACTI128 $1, Y4, X2; \
	VMOVDQA      X4, X1; \
	REDUCETAIL

// func updateVectorY(crc uint32, p []byte) uint32
// updateVector with the AVX2 kernel: len(p) a multiple of 256. The running value joins
// the first block as a CRC32 segment's result would.
TEXT ·updateVectorY(SB), NOSPLIT, $0-36
	MOVL    crc+0(FP), AX
	MOVQ    p_base+8(FP), SI
	MOVQ    p_len+16(FP), CX
	VMOVD   AX, X14
	VPXOR   Y1, Y1, Y1
	VPXOR   Y2, Y2, Y2
	VPXOR   Y3, Y3, Y3
	VPXOR   Y4, Y4, Y4
	VMOVDQU k2048<>(SB), Y0
	FOLDLOOP(FOLDH, loopY, doneY)
	REDUCEH
	MOVL AX, ret+32(FP)
	RET

// func foldBlocksY(acc *[256]byte, p []byte)
// foldBlocks with the AVX2 kernel.
TEXT ·foldBlocksY(SB), NOSPLIT, $0-32
	MOVQ    acc+0(FP), DI
	MOVQ    p_base+8(FP), SI
	MOVQ    p_len+16(FP), CX
	LOADACCH(DI)
	VMOVDQU k2048<>(SB), Y0
	FOLDLOOP(FOLDH, foldLoopY, foldDoneY)
	STOREACCH(DI)
	VZEROUPPER
	RET

// func reduceBlockY(acc *[256]byte) uint32
// reduceBlock with the AVX2 kernel.
TEXT ·reduceBlockY(SB), NOSPLIT, $0-12
	MOVQ acc+0(FP), DI
	LOADACCH(DI)
	REDUCEH
	MOVL AX, ret+8(FP)
	RET

// The pclmul kernels (FOLDP in fold_amd64.h): FOLDH's work on 128-bit registers.

// FOLDLANES folds the 128-bit accumulator src by the distance whose constant is in X0 into
// dst; X13 is scratch.
#define FOLDLANES(src, dst) \
	VPCLMULQDQ $0x11, X0, src, X13; \
	VPCLMULQDQ $0x00, X0, src, src; \
	VPXOR      X13, dst, dst; \
	VPXOR      src, dst, dst

// REDUCEP reduces the pclmul state to the 32-bit running value in AX, as REDUCEH does FOLDH's:
// the lanes of the segment at 0 into those at 64, those into 128, those into 192, by 512 bits
// each; then as REDUCEH from its low and high lane of the last segment. Clobbers X0-X5, X13,
// R8 and the state.
#define REDUCEP \
	VMOVDQU k512<>(SB), X0; \
	FOLDLANES(X1, X2); \
	FOLDLANES(X9, X10); \
	FOLDLANES(X2, X3); \
	FOLDLANES(X10, X11); \
	FOLDLANES(X3, X4); \
	FOLDLANES(X11, X12); \
	VMOVDQA X4, X1; \
	VMOVDQA X12, X2; \
	REDUCETAIL

// func updateVectorP(crc uint32, p []byte) uint32
// updateVector with the pclmul kernel: len(p) a multiple of 256. The running value joins
// the first block as a CRC32 segment's result would.
TEXT ·updateVectorP(SB), NOSPLIT, $0-36
	MOVL    crc+0(FP), AX
	MOVQ    p_base+8(FP), SI
	MOVQ    p_len+16(FP), CX
	VMOVD   AX, X14
	VPXOR   X1, X1, X1
	VPXOR   X2, X2, X2
	VPXOR   X3, X3, X3
	VPXOR   X4, X4, X4
	VPXOR   X9, X9, X9
	VPXOR   X10, X10, X10
	VPXOR   X11, X11, X11
	VPXOR   X12, X12, X12
	VMOVDQU k2048<>(SB), X0
	FOLDLOOP(FOLDP, loopP, doneP)
	REDUCEP
	MOVL AX, ret+32(FP)
	RET

// func foldBlocksP(acc *[256]byte, p []byte)
// foldBlocks with the pclmul kernel.
TEXT ·foldBlocksP(SB), NOSPLIT, $0-32
	MOVQ    acc+0(FP), DI
	MOVQ    p_base+8(FP), SI
	MOVQ    p_len+16(FP), CX
	LOADACCP(DI)
	VMOVDQU k2048<>(SB), X0
	FOLDLOOP(FOLDP, foldLoopP, foldDoneP)
	STOREACCP(DI)
	VZEROUPPER
	RET

// func reduceBlockP(acc *[256]byte) uint32
// reduceBlock with the pclmul kernel.
TEXT ·reduceBlockP(SB), NOSPLIT, $0-12
	MOVQ acc+0(FP), DI
	LOADACCP(DI)
	REDUCEP
	MOVL AX, ret+8(FP)
	RET

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET
