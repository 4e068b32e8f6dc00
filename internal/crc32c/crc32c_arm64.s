//go:build arm64 && !purego

#include "textflag.h"

// func crc32c3(reg uint32, p []byte, l int) (a, b, c uint32)
// Three CRC32CX chains side by side, over p[0:l] from reg, p[l:2l] and p[2l:3l] from zero.
TEXT ·crc32c3(SB), NOSPLIT, $0-52
	MOVWU reg+0(FP), R9
	MOVD  p_base+8(FP), R0
	MOVD  l+32(FP), R3
	ADD   R3, R0, R1
	ADD   R3, R1, R2
	MOVW  ZR, R10
	MOVW  ZR, R11

loop:
	LDP.P   16(R0), (R4, R5)
	LDP.P   16(R1), (R6, R7)
	LDP.P   16(R2), (R8, R12)
	CRC32CX R4, R9
	CRC32CX R6, R10
	CRC32CX R8, R11
	CRC32CX R5, R9
	CRC32CX R7, R10
	CRC32CX R12, R11
	SUBS    $16, R3, R3
	BNE     loop

	MOVW R9, a+40(FP)
	MOVW R10, b+44(FP)
	MOVW R11, c+48(FP)
	RET
