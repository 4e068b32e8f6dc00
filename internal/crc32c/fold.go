package crc32c

// BlockSize is the unit in which a Folder takes bytes.
const BlockSize = 256

// Folder computes the CRC-32C of bytes handed to it in order, in whole 256-byte blocks, so
// that a writer can checksum what it has written so far while the bytes are still in the
// nearest cache, instead of in one pass over the whole object at the end. Sum adds a last,
// partial piece and returns the checksum of everything. A package with its own assembly
// kernel can fold into the Folder's state directly (State, Advance).
//
// The vector state starts at zero, as if the stream's initial CRC register were zero; Sum
// adds the standard initial value's share (all ones, shifted over the stream's length) at
// the end. That keeps every block alike: no call has to treat the stream's first block apart.
//
// The zero value is an empty stream. A Folder is not safe for concurrent use.
type Folder struct {
	acc [256]byte // vector kernel: its unreduced accumulators (see State)
	n   int       // bytes folded so far
	crc uint32    // without the vector kernel: the checksum so far
}

// Reset empties the stream.
func (f *Folder) Reset() { *f = Folder{} }

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
	if level != levelNone {
		foldBlocks(&f.acc, p)
	} else {
		f.crc = updateScalar(f.crc, p)
	}
	f.n += len(p)
}

// gatherStep is how far Gather's copies run ahead of its checksum at the least: it folds
// once a piece's copy brings the unfolded bytes to gatherStep or more, so a long piece is
// copied whole first.
const gatherStep = 8 << 10

// Gather copies pieces into dst one after another, starting at dst[w:], and folds the whole
// blocks of dst from its start: dst[:w] holds bytes written before and not yet folded. It
// returns the number of bytes folded, the largest multiple of BlockSize that has been
// written; the rest is left for the next call (as the start of its dst) or for Sum. (Where
// the vector kernel runs, batchfmt writes its records with a kernel of its own that folds
// as it writes; this is the portable form of the same job.)
//
// dst must have room for w plus the pieces' total length; Gather panics otherwise, before
// any write.
func (f *Folder) Gather(dst []byte, w int, pieces [][]byte) (folded int) {
	end := w
	for _, p := range pieces {
		end += len(p)
	}
	if w < 0 || end > len(dst) {
		panic("crc32c: Folder.Gather: dst is too short for the pieces")
	}
	// Fold as the copies go, after each piece that brings the unfolded bytes to gatherStep,
	// so that the checksum reads bytes still in the near caches rather than the whole of a
	// large gather at the end.
	for _, p := range pieces {
		w += copy(dst[w:], p)
		if w-folded >= gatherStep {
			n := (w - folded) &^ (BlockSize - 1)
			f.Blocks(dst[folded : folded+n])
			folded += n
		}
	}
	n := (w - folded) &^ (BlockSize - 1)
	f.Blocks(dst[folded : folded+n])
	return folded + n
}

// Sum returns the CRC-32C of the folded bytes followed by tail. It does not change the
// stream.
func (f *Folder) Sum(tail []byte) uint32 { return f.SumAfter(0, tail) }

// SumAfter returns the CRC-32C of a prefix, the folded bytes and tail, in that order, given
// the CRC-32C of the prefix alone (as Update would continue from it). It does not change
// the stream.
func (f *Folder) SumAfter(prefix uint32, tail []byte) uint32 {
	crc := prefix
	switch {
	case f.n == 0:
	case level != levelNone:
		// The accumulators hold the stream folded from a zero register; the register the
		// prefix leaves (its CRC, inverted) contributes itself times x^(8n).
		crc = ^(reduceBlock(&f.acc) ^ mulModP(xPow8n(uint64(f.n)), ^prefix))
	default:
		crc = Combine(prefix, f.crc, f.n)
	}
	return Update(crc, tail)
}

// State returns the Folder's vector accumulators, for a package that folds blocks in its own
// assembly kernel (batchfmt's record encoders), in the layout of the kernel Kernel names:
// four unreduced 512-bit accumulators (avx512), or four 256-bit ones and a 32-bit CRC
// (avx2, and pclmul, which keeps each 256-bit accumulator as two 128-bit ones in the same
// bytes; see fold_amd64.h), all zero for an empty stream. After folding n more bytes into
// them, the caller reports it with Advance(n). Only for use when Vector() is true.
func (f *Folder) State() *[256]byte { return &f.acc }

// Advance records that n more bytes were folded into State by the caller's kernel.
func (f *Folder) Advance(n int) { f.n += n }
