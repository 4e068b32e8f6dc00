package crc32c

// Combine returns the CRC-32C of A followed by B, given crcA (of A), crcB (of B) and the
// length of B, without the bytes: crcB ^ crcA·x^(8·lenB) mod P (see Shift).
func Combine(crcA, crcB uint32, lenB int) uint32 {
	if lenB <= 0 {
		return crcA // B is empty (and crcB, the CRC of nothing, is 0)
	}
	return Shift(crcA, lenB) ^ crcB
}

// reflectedPoly is the Castagnoli polynomial in the bit order of the reflected CRC: bit 31 is
// x^0, bit 0 is x^31.
const reflectedPoly = 0x82F63B78

// mulModP multiplies a and b modulo P, both in the reflected bit order.
func mulModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ reflectedPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2n[k] is x^(2^k) mod P, reflected.
var x2n = func() (t [64]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = mulModP(p, p)
	}
	return t
}()

// xPow8n returns x^(8n) mod P, reflected.
func xPow8n(n uint64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			p = mulModP(x2n[k%64], p)
		}
	}
	return p
}
