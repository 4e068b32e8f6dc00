//go:build amd64 && !purego

#include "textflag.h"

// The record kernel for CPUs with AVX2 and PCLMULQDQ but not VPCLMULQDQ: encodeRecordsY of
// encode_avx2_amd64.s (the same copies on 256-bit registers), with the checksum state and
// fold of crc32c's pclmul kernel (FOLDP in fold_amd64.h: FOLDH's fold on 128-bit registers).
//
// Registers as in encodeRecordsY, except: X0 the fold constant, X1-X4, X9-X12 and X14 the
// checksum state, X13 and X15 the fold's scratch.

#include "../internal/crc32c/fold_amd64.h"
#include "encode_amd64.h"

// FOLDBLOCK folds the block at R10 and moves R10 past it. It clobbers AX.
#define FOLDBLOCK \
	FOLDP(R10); \
	ADDQ $256, R10

#include "encode_copy_avx2_amd64.h"

// LOADSTATE and STORESTATE move the pclmul checksum state from and to DI; LOADSTATE also
// loads the fold constant into X0.
#define LOADSTATE \
	LOADACCP(DI); \
	VMOVDQU k2048<>(SB), X0

#define STORESTATE STOREACCP(DI)

// func encodeRecordsP(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int)
//
// encodeRecords512 (encode_amd64.s) with 256-bit copies and the 128-bit fold, with acc in
// crc32c's pclmul layout; the body is encode_kernel_amd64.h.
TEXT ·encodeRecordsP(SB), NOSPLIT, $8-112
#include "encode_kernel_amd64.h"
