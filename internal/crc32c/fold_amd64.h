// The folds of internal/crc32c's kernels (crc32c_amd64.s), the Folder's three of which
// batchfmt's record kernels (encode_amd64.s, encode_avx2_amd64.s, encode_pclmul_amd64.s)
// share: FOLD4, four 512-bit accumulators, 256 bytes per step (the AVX-512 Folder's); FOLDZ
// (AVX-512 Update's), FOLDH (AVX2, Update's and the Folder's) and FOLDP (pclmul, the same),
// each half on the carry-less multiplication and half on the CRC32 instruction. Each fold constant pair is, for a fold distance of D bits,
// x^(D+32) mod P (low qword) and x^(D-32) mod P (high qword), bit-reflected and shifted left
// by one; TestConstants (crc32c_test.go) derives it from the polynomial and checks it.

DATA k2048<>+0(SB)/8, $0xdcb17aa4
DATA k2048<>+8(SB)/8, $0xb9e02b86
DATA k2048<>+16(SB)/8, $0xdcb17aa4
DATA k2048<>+24(SB)/8, $0xb9e02b86
DATA k2048<>+32(SB)/8, $0xdcb17aa4
DATA k2048<>+40(SB)/8, $0xb9e02b86
DATA k2048<>+48(SB)/8, $0xdcb17aa4
DATA k2048<>+56(SB)/8, $0xb9e02b86
GLOBL k2048<>(SB), RODATA|NOPTR, $64

// FOLD4 folds the 256 bytes in Z11-Z14 into the accumulators Z1-Z4 (constant in Z0, from
// k2048); Z5-Z8 are scratch.
#define FOLD4 \
	VPCLMULQDQ $0x11, Z0, Z1, Z5; \
	VPCLMULQDQ $0x00, Z0, Z1, Z1; \
	VPCLMULQDQ $0x11, Z0, Z2, Z6; \
	VPCLMULQDQ $0x00, Z0, Z2, Z2; \
	VPCLMULQDQ $0x11, Z0, Z3, Z7; \
	VPCLMULQDQ $0x00, Z0, Z3, Z3; \
	VPCLMULQDQ $0x11, Z0, Z4, Z8; \
	VPCLMULQDQ $0x00, Z0, Z4, Z4; \
	VPTERNLOGD $0x96, Z11, Z5, Z1; \
	VPTERNLOGD $0x96, Z12, Z6, Z2; \
	VPTERNLOGD $0x96, Z13, Z7, Z3; \
	VPTERNLOGD $0x96, Z14, Z8, Z4

// AVX-512 Update's fold (updateVectorZ). VPCLMULQDQ runs one instruction every other cycle here, on
// 512-bit registers as on 256-bit ones, so folding alone takes 16 bytes per cycle; the CRC32
// instruction, on other execution units, takes as many beside it. Each 256-byte block is cut
// into four 64-byte segments:
//
//	offset  0    64   128  192  256
//	        | Z1 | c  | Z2 | c  |
//
// The segments at 0 and 128 are folded into the accumulators Z1 and Z2 by 2048 bits per
// block (constant k2048 in Z0). Each segment c is checksummed by the CRC32 instruction from a
// zero register and stands in the fold as zeros; its 32-bit result joins the first 4 bytes of
// the segment after it (as in FOLDH below). The last segment's result, X3 (upper bits zero),
// joins the next block's first segment, or, at the end of the stream, the reduced value
// (REDUCEZ in crc32c_amd64.s).

// CRCSEG64 sets AX to the CRC32 instruction's register over the 64 bytes at off(base), from
// zero.
#define CRCSEG64(base, off) \
	XORL   AX, AX; \
	CRC32Q (off)(base), AX; \
	CRC32Q (off+8)(base), AX; \
	CRC32Q (off+16)(base), AX; \
	CRC32Q (off+24)(base), AX; \
	CRC32Q (off+32)(base), AX; \
	CRC32Q (off+40)(base), AX; \
	CRC32Q (off+48)(base), AX; \
	CRC32Q (off+56)(base), AX

// FOLDZ folds the 256-byte block at base into Z1, Z2 and X3 as described above. Z5, Z6, Z11-Z13
// and AX are scratch.
#define FOLDZ(base) \
	VMOVDQU64  (base), Z11; \
	VMOVDQU64  128(base), Z12; \
	VPXORQ     Z3, Z11, Z11; \
	VPCLMULQDQ $0x11, Z0, Z1, Z5; \
	VPCLMULQDQ $0x00, Z0, Z1, Z1; \
	VPTERNLOGD $0x96, Z11, Z5, Z1; \
	CRCSEG64(base, 64); \
	VMOVD      AX, X13; \
	VPXORQ     Z13, Z12, Z12; \
	CRCSEG64(base, 192); \
	VMOVD      AX, X3; \
	VPCLMULQDQ $0x11, Z0, Z2, Z6; \
	VPCLMULQDQ $0x00, Z0, Z2, Z2; \
	VPTERNLOGD $0x96, Z12, Z6, Z2

// The AVX2 kernels' fold, for CPUs with VPCLMULQDQ but without AVX-512 (AMD Zen 3, Intel
// client cores from Alder Lake on). With 256-bit registers a carry-less multiplication
// covers half the bytes it does with AVX-512, so folding alone runs at about the speed of
// the CRC32 instruction; the two run side by side instead. Each 256-byte block is cut into
// eight 32-byte segments:
//
//	offset  0   32   64   96   128  160  192  224  256
//	        | Y1 | c  | Y2 | c  | Y3 | c  | Y4 | c  |
//
// The segments at 0, 64, 128 and 192 are folded into the accumulators Y1-Y4 by 2048 bits
// per block (constant k2048, low half, in Y0), as FOLD4 folds its lanes. Each segment c is
// checksummed by the CRC32 instruction from a zero register and stands in the fold as zeros;
// its 32-bit result r = c·x^32 mod P joins the first 4 bytes of the segment after it, which
// is the same polynomial modulo P (the identity by which a running CRC joins the next data).
// The last segment's result, X14 (upper bits zero), joins the next block's first segment,
// or, at the end of the stream, the reduced value itself. State: Y1-Y4 (128 bytes), then
// X14's low 32 bits.

// CRCSEG sets AX to the CRC32 instruction's register over the 32 bytes at off(base), from
// zero.
#define CRCSEG(base, off) \
	XORL   AX, AX; \
	CRC32Q (off)(base), AX; \
	CRC32Q (off+8)(base), AX; \
	CRC32Q (off+16)(base), AX; \
	CRC32Q (off+24)(base), AX

// FOLDH folds the 256-byte block at base into Y1-Y4 and X14 as described above. Y9-Y13 and
// Y15 and AX are scratch.
#define FOLDH(base) \
	VMOVDQU    (base), Y9; \
	VMOVDQU    64(base), Y10; \
	VMOVDQU    128(base), Y11; \
	VMOVDQU    192(base), Y12; \
	VPXOR      Y14, Y9, Y9; \
	CRCSEG(base, 32); \
	VMOVD      AX, X13; \
	VPXOR      Y13, Y10, Y10; \
	CRCSEG(base, 96); \
	VMOVD      AX, X15; \
	VPXOR      Y15, Y11, Y11; \
	CRCSEG(base, 160); \
	VMOVD      AX, X13; \
	VPXOR      Y13, Y12, Y12; \
	CRCSEG(base, 224); \
	VMOVD      AX, X14; \
	VPCLMULQDQ $0x11, Y0, Y1, Y13; \
	VPCLMULQDQ $0x00, Y0, Y1, Y1; \
	VPCLMULQDQ $0x11, Y0, Y2, Y15; \
	VPCLMULQDQ $0x00, Y0, Y2, Y2; \
	VPXOR      Y13, Y9, Y9; \
	VPXOR      Y15, Y10, Y10; \
	VPXOR      Y9, Y1, Y1; \
	VPXOR      Y10, Y2, Y2; \
	VPCLMULQDQ $0x11, Y0, Y3, Y13; \
	VPCLMULQDQ $0x00, Y0, Y3, Y3; \
	VPCLMULQDQ $0x11, Y0, Y4, Y15; \
	VPCLMULQDQ $0x00, Y0, Y4, Y4; \
	VPXOR      Y13, Y11, Y11; \
	VPXOR      Y15, Y12, Y12; \
	VPXOR      Y11, Y3, Y3; \
	VPXOR      Y12, Y4, Y4

// LOADACCH and STOREACCH move the state (Y1-Y4 and X14) from and to the 256 bytes at reg.
#define LOADACCH(reg) \
	VMOVDQU (reg), Y1; \
	VMOVDQU 32(reg), Y2; \
	VMOVDQU 64(reg), Y3; \
	VMOVDQU 96(reg), Y4; \
	VMOVD   128(reg), X14

#define STOREACCH(reg) \
	VMOVDQU Y1, (reg); \
	VMOVDQU Y2, 32(reg); \
	VMOVDQU Y3, 64(reg); \
	VMOVDQU Y4, 96(reg); \
	VMOVD   X14, 128(reg)

// The pclmul kernels' fold, for CPUs with AVX2 and PCLMULQDQ but not VPCLMULQDQ (Intel from
// Haswell to Cascade Lake, AMD Zen 1 and 2): FOLDH with each 256-bit accumulator kept as
// two 128-bit ones, folded by the 128-bit carry-less multiplication. The block is cut as
// FOLDH cuts it, and the state is laid out in memory as FOLDH's, lane for lane:
//
//	offset  0       16      32      48      64      80      96      112     128
//	        | X1    | X9    | X2    | X10   | X3    | X11   | X4    | X12   | X14 |
//
// X1 and X9 fold the segment at 0 of each block (FOLDH's Y1), X2 and X10 the segment at 64,
// X3 and X11 the one at 128, X4 and X12 the one at 192; X14 is the last CRC32 segment's
// result. Each lane folds by 2048 bits (constant k2048, low 128 bits, in X0). The CRC32
// instruction then takes half of each block, as in FOLDH. Where the multiplication issues
// once a cycle beside the CRC32 instruction, on other units (Intel from Broadwell to Cascade
// Lake, by published instruction tables), that halves the checksum's time; where it issues
// every other cycle (Haswell and AMD Zen 1 and 2 by those tables, and the development
// machine, measured), the checksum runs at the CRC32 instruction's speed, and what is gained
// is batchfmt's record kernel folding while it copies.

// FOLDLANE folds the 128-bit accumulator acc by the distance whose constant is in X0 and adds
// the 16 bytes at off(base); X13 is scratch.
#define FOLDLANE(acc, base, off) \
	VPCLMULQDQ $0x11, X0, acc, X13; \
	VPCLMULQDQ $0x00, X0, acc, acc; \
	VPXOR      off(base), X13, X13; \
	VPXOR      X13, acc, acc

// FOLDP folds the 256-byte block at base into X1-X4, X9-X12 and X14 as described above.
// X13, X15 and AX are scratch.
#define FOLDP(base) \
	FOLDLANE(X1, base, 0); \
	VPXOR      X14, X1, X1; \
	FOLDLANE(X9, base, 16); \
	CRCSEG(base, 32); \
	VMOVD      AX, X15; \
	FOLDLANE(X2, base, 64); \
	VPXOR      X15, X2, X2; \
	FOLDLANE(X10, base, 80); \
	CRCSEG(base, 96); \
	VMOVD      AX, X15; \
	FOLDLANE(X3, base, 128); \
	VPXOR      X15, X3, X3; \
	FOLDLANE(X11, base, 144); \
	CRCSEG(base, 160); \
	VMOVD      AX, X15; \
	FOLDLANE(X4, base, 192); \
	VPXOR      X15, X4, X4; \
	FOLDLANE(X12, base, 208); \
	CRCSEG(base, 224); \
	VMOVD      AX, X14

// LOADACCP and STOREACCP move the pclmul state from and to the 256 bytes at reg.
#define LOADACCP(reg) \
	VMOVDQU (reg), X1; \
	VMOVDQU 16(reg), X9; \
	VMOVDQU 32(reg), X2; \
	VMOVDQU 48(reg), X10; \
	VMOVDQU 64(reg), X3; \
	VMOVDQU 80(reg), X11; \
	VMOVDQU 96(reg), X4; \
	VMOVDQU 112(reg), X12; \
	VMOVD   128(reg), X14

#define STOREACCP(reg) \
	VMOVDQU X1, (reg); \
	VMOVDQU X9, 16(reg); \
	VMOVDQU X2, 32(reg); \
	VMOVDQU X10, 48(reg); \
	VMOVDQU X3, 64(reg); \
	VMOVDQU X11, 80(reg); \
	VMOVDQU X4, 96(reg); \
	VMOVDQU X12, 112(reg); \
	VMOVD   X14, 128(reg)
