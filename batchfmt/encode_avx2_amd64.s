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

// FOLDBLOCK folds the block at R10 and moves R10 past it. It clobbers AX.
#define FOLDBLOCK \
	FOLDH(R10); \
	ADDQ $256, R10

#include "encode_copy_avx2_amd64.h"

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
