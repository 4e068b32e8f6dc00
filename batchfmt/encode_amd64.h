// Macros shared by the record kernels (encode_amd64.s for AVX-512, encode_avx2_amd64.s for
// AVX2, encode_pclmul_amd64.s for AVX2 without VPCLMULQDQ): frame lengths and sizes, the fold
// behind the writes and the start of each COPY. Register roles as in encodeRecords.

// PUTLEN writes the length in reg at R9 as 2 big-endian bytes, or as the escape 0xFFFF and
// 4 bytes when it is 0xFFFF or more, and moves R9 past it.
#define PUTLEN(reg, escape, done) \
	CMPQ   reg, $0xFFFF; \
	JAE    escape; \
	MOVL   reg, AX; \
	ROLW   $8, AX; \
	MOVW   AX, (R9); \
	ADDQ   $2, R9; \
	JMP    done; \
escape: \
	MOVW   $0xFFFF, (R9); \
	MOVL   reg, AX; \
	BSWAPL AX; \
	MOVL   AX, 2(R9); \
	ADDQ   $6, R9; \
done:

// SIZEHEADERS sizes the record at SI as recordSize does: M its metered size (8, 2 per
// header, names, values and body), W its frame's length without the magic byte, the
// metered size's field and the timestamp (the count field, each header's two length fields
// with their 0xFFFF escapes, names, values and body). A header with an empty name (a
// command record, or an invalid one) jumps to cmd. BX, R12 and AX are scratch.
#define SIZEHEADERS(M, W, cmd) \
	MOVQ  24(SI), R12; \
	MOVQ  16(SI), BX; \
	MOVQ  48(SI), AX; \
	LEAQ  8(AX)(R12*2), M; \
	LEAQ  2(AX), W; \
	CMPQ  R12, $0xFFFF; \
	JB    sizeHeader; \
	ADDQ  $4, W; \
sizeHeader: \
	TESTQ R12, R12; \
	JZ    sizeDone; \
	MOVQ  8(BX), AX; \
	TESTQ AX, AX; \
	JZ    cmd; \
	ADDQ  AX, M; \
	LEAQ  4(W)(AX*1), W; \
	CMPQ  AX, $0xFFFF; \
	JB    sizeValue; \
	ADDQ  $4, W; \
sizeValue: \
	MOVQ  32(BX), AX; \
	ADDQ  AX, M; \
	ADDQ  AX, W; \
	CMPQ  AX, $0xFFFF; \
	JB    sizeNext; \
	ADDQ  $4, W; \
sizeNext: \
	ADDQ  $48, BX; \
	DECQ  R12; \
	JMP   sizeHeader; \
sizeDone:

// LEADOF completes SIZEHEADERS as frameLead does: AX the length of the metered size's field
// (1, 2 or 3 bytes), BX 1 if the record has a timestamp, W the whole frame's length, and
// LEAD the frame's first 4 bytes in memory order (the magic byte, then the metered size,
// big-endian). M must fit in 3 bytes (the caller's 1 MiB check). T is scratch.
#define LEADOF(M, W, LEAD, T) \
	MOVL    $1, AX; \
	CMPQ    M, $0x100; \
	JB      leadMagic; \
	MOVL    $2, AX; \
	CMPQ    M, $0x10000; \
	JB      leadMagic; \
	MOVL    $3, AX; \
leadMagic: \
	MOVBLZX 8(SI), BX; \
	LEAQ    1(W)(AX*1), W; \
	LEAQ    (W)(BX*8), W; \
	LEAL    -1(AX), T; \
	SHLL    $3, T; \
	ORL     $2, T; \
	MOVL    BX, LEAD; \
	SHLL    $5, LEAD; \
	ORL     LEAD, T; \
	MOVL    $3, LEAD; \
	SUBL    AX, LEAD; \
	SHLL    $3, LEAD; \
	SHLXL   LEAD, M, LEAD; \
	BSWAPL  LEAD; \
	ORL     T, LEAD

// A block is folded once it lies LAG bytes behind the write position, so that its stores
// have left the store buffer and it is read back from the L1 cache.
#define LAG 1024

// FOLDBEHIND folds one block if it lies LAG bytes behind the write position R9, with the
// kernel's FOLDBLOCK (defined by each kernel before its COPY is used).
#define FOLDBEHIND(skip) \
	MOVQ R9, AX; \
	SUBQ R10, AX; \
	CMPQ AX, $(256+LAG); \
	JB   skip; \
	FOLDBLOCK; \
skip:

// COPYFITS starts every kernel's COPY: it fails unless R12 bytes fit before the frame's end
// DX (a signed test: R9 may already be a few bytes past DX after a length field), and jumps
// to l64 when there is no whole 256-byte block to copy.
#define COPYFITS(l64) \
	MOVQ DX, AX; \
	SUBQ R9, AX; \
	CMPQ R12, AX; \
	JGT  fail; \
	CMPQ R12, $256; \
	JB   l64
