package crc32c

import (
	"encoding/binary"
	"hash/crc32"
)

// BlockSize is the unit in which a Folder takes bytes.
const BlockSize = 256

// Folder computes the CRC-32C of bytes handed to it in order, in whole 256-byte blocks, and
// can copy the blocks on the way: CopyBlocks loads each block once, stores it and folds it,
// so that a copy and its checksum cost about what the copy alone does. Sum adds a last,
// partial piece and returns the checksum of everything.
//
// The zero value is an empty stream. A Folder is not safe for concurrent use.
type Folder struct {
	acc [256]byte // vector kernel: four unreduced 512-bit accumulators
	n   int       // bytes folded so far
	crc uint32    // without the vector kernel: the checksum so far
}

// Reset empties the stream.
func (f *Folder) Reset() { f.n, f.crc = 0, 0 }

// Len returns the number of bytes folded so far.
func (f *Folder) Len() int { return f.n }

// Blocks folds p, whose length must be a multiple of BlockSize (it panics otherwise: that is
// a programming error, not bad input).
func (f *Folder) Blocks(p []byte) {
	if len(p)%BlockSize != 0 {
		panic("crc32c: Folder.Blocks: length is not a multiple of 256")
	}
	if len(p) == 0 {
		return
	}
	if !useVector {
		f.crc = crc32Update(f.crc, p)
		f.n += len(p)
		return
	}
	if f.n == 0 {
		f.first(p[:BlockSize])
		p = p[BlockSize:]
	}
	foldBlocks(&f.acc, p)
	f.n += len(p)
}

// CopyBlocks copies the longest prefix of src that is a whole number of blocks into dst,
// folds it, and returns its length. dst must be at least that long.
func (f *Folder) CopyBlocks(dst, src []byte) int {
	n := len(src) &^ (BlockSize - 1)
	if n == 0 {
		return 0
	}
	dst = dst[:n] // panics if dst is too short, before any write
	if !useVector {
		copy(dst, src[:n])
		f.crc = crc32Update(f.crc, dst)
		f.n += n
		return n
	}
	if f.n == 0 {
		copy(dst[:BlockSize], src)
		f.first(dst[:BlockSize])
		dst, src = dst[BlockSize:], src[BlockSize:n]
	}
	copyFoldBlocks(&f.acc, dst, src[:len(dst)])
	f.n += len(dst)
	return n
}

// first starts the vector state with the stream's first block: the initial running value
// (all ones, the standard CRC-32C's) joins its first 32 bits, as in updateVector.
func (f *Folder) first(b []byte) {
	copy(f.acc[:], b)
	binary.LittleEndian.PutUint32(f.acc[:4], binary.LittleEndian.Uint32(f.acc[:4])^0xFFFFFFFF)
	f.n += BlockSize
}

// Sum returns the CRC-32C of the folded bytes followed by tail. It does not change the
// stream.
func (f *Folder) Sum(tail []byte) uint32 {
	crc := f.crc
	if useVector && f.n > 0 {
		crc = ^reduceBlock(&f.acc)
	}
	return Update(crc, tail)
}

func crc32Update(crc uint32, p []byte) uint32 { return crc32.Update(crc, table, p) }
