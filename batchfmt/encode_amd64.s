//go:build amd64 && !purego

#include "textflag.h"

// The record kernel: writes an append's record frames (layout in doc.go) from the Records
// themselves and folds the CRC32C of the written bytes on the way, with the AVX-512 Folder's
// fold of internal/crc32c (FOLD4 in fold_amd64.h; the constant is derived and tested there):
// four 512-bit accumulators, 256 bytes per step.

#include "../internal/crc32c/fold_amd64.h"
#include "encode_amd64.h"



// FOLDBLOCK folds the block at R10 and moves R10 past it.
#define FOLDBLOCK \
	VMOVDQU64 (R10), Z11; \
	VMOVDQU64 64(R10), Z12; \
	VMOVDQU64 128(R10), Z13; \
	VMOVDQU64 192(R10), Z14; \
	FOLD4; \
	ADDQ      $256, R10


// COPY copies R12 bytes from R11 to R9 and moves R9 past them, folding blocks behind as it
// goes; it fails if they would pass the frame's end DX (a signed test: R9 may already be a
// few bytes past DX after a length field). The last partial 64 bytes are loaded under a
// byte mask, so nothing past the source is read, and stored whole, as 16 bytes when they
// fit (a store that rarely crosses a cache line) or else 64: the excess, up to 63 bytes,
// is overwritten by the frames that follow or falls in the caller's kernelSlack (an
// unmasked store is the cheaper one here, and no block is folded before it is final).
// (l8, l4, l1 and ladvance are labels of the AVX2 kernel's COPY, unused here: the body
// names the same labels for both.)
#define COPY(l256, lfold, l64, ltail, l32, l8, l4, l1, ladvance, done) \
	COPYFITS(l64); \
l256: \
	VMOVDQU64  (R11), Z15; \
	VMOVDQU64  64(R11), Z16; \
	VMOVDQU64  128(R11), Z17; \
	VMOVDQU64  192(R11), Z18; \
	VMOVDQU64  Z15, (R9); \
	VMOVDQU64  Z16, 64(R9); \
	VMOVDQU64  Z17, 128(R9); \
	VMOVDQU64  Z18, 192(R9); \
	ADDQ       $256, R11; \
	ADDQ       $256, R9; \
	SUBQ       $256, R12; \
	FOLDBEHIND(lfold); \
	CMPQ       R12, $256; \
	JAE        l256; \
l64: \
	CMPQ       R12, $64; \
	JB         ltail; \
	VMOVDQU64  (R11), Z15; \
	VMOVDQU64  Z15, (R9); \
	ADDQ       $64, R11; \
	ADDQ       $64, R9; \
	SUBQ       $64, R12; \
	JMP        l64; \
ltail: \
	TESTQ      R12, R12; \
	JZ         done; \
	BZHIQ      R12, R13, AX; \
	KMOVQ      AX, K1; \
	CMPQ       R12, $16; \
	JA         l32; \
	VMOVDQU8.Z (R11), K1, X15; \
	VMOVDQU    X15, (R9); \
	ADDQ       R12, R9; \
	JMP        done; \
l32: \
	VMOVDQU8.Z (R11), K1, Z15; \
	VMOVDQU64  Z15, (R9); \
	ADDQ       R12, R9; \
done:

// SMALLHEADER writes the header at BX, when its name and value are 1 to 16 bytes each, as
// its two length fields, name and value, with one masked load and one 16-byte store apiece
// and no branch taken, and moves R9 past it; a header of another shape goes on at other,
// with BX as it was and nothing written (R11 and R12 are scratch). The frame's end was checked before it
// (R9 <= DX): the stores reach at most 36 bytes past that, within kernelSlack, and a record
// that changed since it was sized fails at the later checks. ONESMALLHEADER writes the
// count field and the only header of a record that has one such header, then goes on at
// body; other records go on at other, nothing written and R12 as it was.
#define SMALLHEADER(other) \
	MOVQ       8(BX), R11; \
	MOVQ       32(BX), R12; \
	LEAQ       -1(R11), AX; \
	CMPQ       AX, $15; \
	JA         other; \
	LEAQ       -1(R12), AX; \
	CMPQ       AX, $15; \
	JA         other; \
	BZHIQ      R11, R13, AX; \
	KMOVQ      AX, K1; \
	BZHIQ      R12, R13, AX; \
	KMOVQ      AX, K2; \
	MOVQ       0(BX), AX; \
	VMOVDQU8.Z (AX), K1, X15; \
	MOVQ       24(BX), AX; \
	VMOVDQU8.Z (AX), K2, X16; \
	MOVL       R11, AX; \
	ROLW       $8, AX; \
	MOVW       AX, (R9); \
	VMOVDQU    X15, 2(R9); \
	LEAQ       2(R9)(R11*1), R9; \
	MOVL       R12, AX; \
	ROLW       $8, AX; \
	MOVW       AX, (R9); \
	VMOVDQU64  X16, 2(R9); \
	LEAQ       2(R9)(R12*1), R9

#define ONESMALLHEADER(other, body) \
	CMPQ R12, $1; \
	JNE  other; \
	MOVW $0x0100, (R9); \
	ADDQ $2, R9; \
	SMALLHEADER(oneOther); \
	JMP  body; \
oneOther: \
	SUBQ $2, R9; \
	MOVQ $1, R12; \
	JMP  other

// LOADSTATE and STORESTATE move the four 512-bit accumulators Z1-Z4 from and to the state at
// DI; LOADSTATE also loads the fold constant into Z0 and sets R13 to all ones (the tail
// copy's byte masks).
#define LOADSTATE \
	VMOVDQU64 (DI), Z1; \
	VMOVDQU64 64(DI), Z2; \
	VMOVDQU64 128(DI), Z3; \
	VMOVDQU64 192(DI), Z4; \
	VMOVDQU64 k2048<>(SB), Z0; \
	MOVQ      $-1, R13

#define STORESTATE \
	VMOVDQU64 Z1, (DI); \
	VMOVDQU64 Z2, 64(DI); \
	VMOVDQU64 Z3, 128(DI); \
	VMOVDQU64 Z4, 192(DI)

// func encodeRecords512(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int)
//
// Records (64 bytes): Timestamp at 0, HasTimestamp at 8, Headers at 16 (base, len), Body at
// 40 (base, len). Headers (48 bytes): Name at 0, Value at 24. recMeta (16 bytes): lead at 0
// (the magic byte and the metered size, as the frame's first 4 bytes), its length in bytes
// at 4, the frame's length at 8, and at 12 whether the frame has a timestamp.
// encode_amd64.go checks these offsets at compile time.
//
// With metas, each record is written as its meta says, as many records as both slices
// hold, and a frame ending past end fails the call. Without metas, the kernel sizes each
// record itself just before writing it (the records and headers are then read once, not
// in a pass of their own): end is the limit no frame may pass, and the kernel stops,
// without touching acc, before a record with an empty header name (a command record, or an
// invalid one), before the metered total would pass MaxAppendBytes (1 MiB), and before a
// frame that would pass end; done says how many records were written.
//
// A record whose bytes no longer fit the length sized for it (it changed since, under a
// racing writer) fails the call: every copy is checked against the frame's end, and the
// frame must end exactly there. Changes that keep the length are not detected here; the
// reader's checks refuse the object.
//
// Registers: SI record, DI meta (0 without metas), CX records left, R8 end, DX end of this
// frame, R9 write position, R10 fold position, BX header, R14 end of headers, R11/R12 copy
// source and length, R13 all ones (set by LOADSTATE), AX scratch; the metered total is kept
// in a local. The body is encode_kernel_amd64.h, shared with encodeRecordsY.
TEXT ·encodeRecords512(SB), NOSPLIT, $8-112
#include "encode_kernel_amd64.h"

// func sizeRecords(recs []Record, metas []recMeta) (metered, wire, sized int)
//
// Sizes envelope records as recordSize and frameLead do, into metas, as many as both slices
// hold; it stops before the first record with an empty header name (a command record, or an
// invalid one), which the caller sizes and validates in Go. A record's meta is meaningful
// only if the metered total stays within 1 MiB (the caller's check): larger sizes do not
// fit the 3-byte field and are truncated, as are frame lengths past 32 bits.
//
// Registers: SI record, DI meta, CX records left, R9 metered size and R10 frame length of
// this record, R14 and R13 the totals, AX BX R8 R11 R12 scratch.
TEXT ·sizeRecords(SB), NOSPLIT, $0-72
	MOVQ    recs_base+0(FP), SI
	MOVQ    recs_len+8(FP), CX
	MOVQ    metas_len+32(FP), AX
	CMPQ    AX, CX
	CMOVQLT AX, CX
	MOVQ    metas_base+24(FP), DI
	XORQ    R14, R14
	XORQ    R13, R13
	TESTQ   CX, CX
	JZ      sized

size:
	// Prefetch the record 8 ahead and the headers of the record 4 ahead (which the
	// hardware's prefetcher does not follow: they are allocations of their own); a nil
	// pointer is replaced by SI, as in encodeRecords.
	CMPQ       CX, $8
	JBE        sizeThis
	PREFETCHT0 (8*64)(SI)
	MOVQ       (4*64+16)(SI), AX
	TESTQ      AX, AX
	CMOVQEQ    SI, AX
	PREFETCHT0 (AX)

sizeThis:
	SIZEHEADERS(R9, R10, sized)
	LEADOF(R9, R10, R8, R11)
	MOVL R8, 0(DI)
	INCL AX
	MOVL AX, 4(DI)
	MOVL R10, 8(DI)
	MOVL BX, 12(DI)
	ADDQ R9, R14
	ADDQ R10, R13
	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  size

sized:
	MOVQ R14, metered+48(FP)
	MOVQ R13, wire+56(FP)
	MOVQ recs_base+0(FP), AX
	SUBQ AX, SI
	SHRQ $6, SI
	MOVQ SI, sized+64(FP)
	RET
