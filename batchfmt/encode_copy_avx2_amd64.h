// The copy of the AVX2 and pclmul record kernels (encode_avx2_amd64.s,
// encode_pclmul_amd64.s), on 256-bit registers; each defines FOLDBLOCK first, which folds
// the block at R10, moves R10 past it and may clobber AX.

// COPY copies R12 bytes from R11 to R9 and moves R9 past them, folding blocks behind as it
// goes; it fails if they would pass the frame's end DX (a signed test: R9 may already be a
// few bytes past DX after a length field).
#define COPY(l256, lfold, l64, ltail, l16, l8, l4, l1, ladvance, done) \
	COPYFITS(l64); \
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
