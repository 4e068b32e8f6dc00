package crc32c

// Raw returns the CRC register, without the initial and final inversions, after the bytes
// of d from a zero register: the contribution of d to the CRC-32C of any message holding
// d, read at the end of d. Checksums are linear in this sense: if M' is M with the bytes
// at [p, p+len(d)) changed by XOR with d, then
//
//	Checksum(M') == Checksum(M) ^ Shift(Raw(d), len(M)-p-len(d))
//
// which lets a writer checksum a field before its value is known and patch the sum later.
func Raw(d []byte) uint32 { return ^Update(^uint32(0), d) }

// Shift returns the CRC register reg advanced over n zero bytes: reg·x^(8n) mod P (about
// 30 ns with carry-less multiplication; n <= 0 returns reg).
func Shift(reg uint32, n int) uint32 {
	switch {
	case n <= 0:
		return reg
	case useClmul && uint64(n) < 1<<maxShiftBits:
		return shiftClmul(reg, uint64(n), &shiftTable)
	}
	return mulModP(xPow8n(uint64(n)), reg)
}

// maxShiftBits bounds the distances of the fast path: n < 2^maxShiftBits.
const maxShiftBits = 40

// shiftTable[k] is x^(8·2^k - 32) mod P for k >= 2, reflected: shiftClmul multiplies by it
// with a carry-less multiplication and reduces the product with the CRC32 instruction,
// which multiplies by x^32 on the way (see crc32c_amd64.s). Entries 0 and 1 are unused.
var shiftTable = func() (t [maxShiftBits]uint32) {
	for k := 2; k < maxShiftBits; k++ {
		t[k] = xPow8n(uint64(1)<<k - 4) // x^(8·(2^k - 4)) = x^(8·2^k - 32)
	}
	return t
}()
