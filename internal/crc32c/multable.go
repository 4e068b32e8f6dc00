package crc32c

// mulTable multiplies CRC registers by one constant modulo P, a byte at a time: the product
// is linear in the register, so it is the XOR of the products of its four bytes, each
// looked up.
type mulTable [4][256]uint32

// newMulTable returns the table that multiplies by k (reflected, as mulModP's operands).
func newMulTable(k uint32) *mulTable {
	t := new(mulTable)
	for j := range t {
		for b := 1; b < 256; b++ {
			if low := b & -b; low == b {
				t[j][b] = mulModP(k, uint32(b)<<(8*j)) // one bit: multiply
			} else {
				t[j][b] = t[j][b^low] ^ t[j][low] // more: the XOR of its parts (linearity)
			}
		}
	}
	return t
}

// mul returns reg·k mod P.
func (t *mulTable) mul(reg uint32) uint32 {
	return t[0][reg&0xFF] ^ t[1][reg>>8&0xFF] ^ t[2][reg>>16&0xFF] ^ t[3][reg>>24]
}
