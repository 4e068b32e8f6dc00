// The fold by 2048 bits that internal/crc32c's kernels (crc32c_amd64.s) and batchfmt's record
// kernel (encode_amd64.s) share: four 512-bit accumulators, 256 bytes per step. Each fold
// constant pair is, for a fold distance of D bits, x^(D+32) mod P (low qword) and
// x^(D-32) mod P (high qword), bit-reflected and shifted left by one; TestConstants
// (crc32c_test.go) derives it from the polynomial and checks it.

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
