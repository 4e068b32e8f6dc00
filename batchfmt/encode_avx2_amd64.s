//go:build amd64 && !purego

#include "textflag.h"

// The record kernel for CPUs with AVX2 and VPCLMULQDQ but not AVX-512: encodeRecords of
// encode_amd64.s, with the checksum state and fold of crc32c's AVX2 kernel (FOLDH in
// fold_amd64.h: half of each block folded on 256-bit registers, half checksummed by the
// CRC32 instruction) and copies on 256-bit registers. Without byte-masked loads, the last
// bytes of a piece (fewer than 64) are moved as its first and last 32, 16, 8 or 4 bytes,
// two loads and stores that overlap, or byte by byte below 4: nothing past the source is
// read and nothing past the piece written.
//
// Registers as in encodeRecords, except: Y0 the fold constant, Y1-Y4 and X14 the checksum
// state, Y5-Y8 the copy, Y9-Y13 and Y15 the fold's scratch; R13 is scratch in the copy.

#include "../internal/crc32c/fold_amd64.h"
#include "encode_amd64.h"

// A block is folded once it lies LAG bytes behind the write position, so that its stores
// have left the store buffer and it is read back from the L1 cache.
#define LAG 1024

// FOLDBLOCK folds the block at R10 and moves R10 past it. It clobbers AX.
#define FOLDBLOCK \
	FOLDH(R10); \
	ADDQ $256, R10

// FOLDBEHIND folds one block if it lies LAG bytes behind the write position R9.
#define FOLDBEHIND(skip) \
	MOVQ R9, AX; \
	SUBQ R10, AX; \
	CMPQ AX, $(256+LAG); \
	JB   skip; \
	FOLDBLOCK; \
skip:

// COPY copies R12 bytes from R11 to R9 and moves R9 past them, folding blocks behind as it
// goes; it fails if they would pass the frame's end DX (a signed test: R9 may already be a
// few bytes past DX after a length field).
#define COPY(l256, lfold, l64, ltail, l16, l8, l4, l1, ladvance, done) \
	MOVQ       DX, AX; \
	SUBQ       R9, AX; \
	CMPQ       R12, AX; \
	JGT        fail; \
	CMPQ       R12, $256; \
	JB         l64; \
l256: \
	VMOVDQU    (R11), Y5; \
	VMOVDQU    32(R11), Y6; \
	VMOVDQU    64(R11), Y7; \
	VMOVDQU    96(R11), Y8; \
	VMOVDQU    Y5, (R9); \
	VMOVDQU    Y6, 32(R9); \
	VMOVDQU    Y7, 64(R9); \
	VMOVDQU    Y8, 96(R9); \
	VMOVDQU    128(R11), Y5; \
	VMOVDQU    160(R11), Y6; \
	VMOVDQU    192(R11), Y7; \
	VMOVDQU    224(R11), Y8; \
	VMOVDQU    Y5, 128(R9); \
	VMOVDQU    Y6, 160(R9); \
	VMOVDQU    Y7, 192(R9); \
	VMOVDQU    Y8, 224(R9); \
	ADDQ       $256, R11; \
	ADDQ       $256, R9; \
	SUBQ       $256, R12; \
	FOLDBEHIND(lfold); \
	CMPQ       R12, $256; \
	JAE        l256; \
l64: \
	CMPQ       R12, $64; \
	JB         ltail; \
	VMOVDQU    (R11), Y5; \
	VMOVDQU    32(R11), Y6; \
	VMOVDQU    Y5, (R9); \
	VMOVDQU    Y6, 32(R9); \
	ADDQ       $64, R11; \
	ADDQ       $64, R9; \
	SUBQ       $64, R12; \
	JMP        l64; \
ltail: \
	CMPQ       R12, $32; \
	JB         l16; \
	VMOVDQU    (R11), Y5; \
	VMOVDQU    -32(R11)(R12*1), Y6; \
	VMOVDQU    Y5, (R9); \
	VMOVDQU    Y6, -32(R9)(R12*1); \
	JMP        ladvance; \
l16: \
	CMPQ       R12, $16; \
	JB         l8; \
	VMOVDQU    (R11), X5; \
	VMOVDQU    -16(R11)(R12*1), X6; \
	VMOVDQU    X5, (R9); \
	VMOVDQU    X6, -16(R9)(R12*1); \
	JMP        ladvance; \
l8: \
	CMPQ       R12, $8; \
	JB         l4; \
	MOVQ       (R11), AX; \
	MOVQ       -8(R11)(R12*1), R13; \
	MOVQ       AX, (R9); \
	MOVQ       R13, -8(R9)(R12*1); \
	JMP        ladvance; \
l4: \
	CMPQ       R12, $4; \
	JB         l1; \
	MOVL       (R11), AX; \
	MOVL       -4(R11)(R12*1), R13; \
	MOVL       AX, (R9); \
	MOVL       R13, -4(R9)(R12*1); \
	JMP        ladvance; \
l1: \
	TESTQ      R12, R12; \
	JZ         done; \
	MOVBLZX    (R11), AX; \
	MOVB       AX, (R9); \
	MOVBLZX    -1(R11)(R12*1), AX; \
	MOVB       AX, -1(R9)(R12*1); \
	CMPQ       R12, $3; \
	JB         ladvance; \
	MOVBLZX    1(R11), AX; \
	MOVB       AX, 1(R9); \
ladvance: \
	ADDQ       R12, R9; \
done:

// LOADSTATE and STORESTATE move the AVX2 checksum state (Y1-Y4 and X14) from and to DI;
// LOADSTATE also loads the fold constant into Y0.
#define LOADSTATE \
	LOADACCH(DI); \
	VMOVDQU k2048<>(SB), Y0

#define STORESTATE STOREACCH(DI)

// func encodeRecordsY(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int)
//
// encodeRecords512 (encode_amd64.s) for AVX2, with acc in crc32c's AVX2 layout; the body is
// encode_kernel_amd64.h.
TEXT ·encodeRecordsY(SB), NOSPLIT, $8-112
#include "encode_kernel_amd64.h"
