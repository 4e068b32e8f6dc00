package crc32c

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestFolder feeds random streams to a Folder in random pieces (folded in place, or copied
// and folded) and checks Sum against hash/crc32 over the same bytes, and each copy.
func TestFolder(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d (vector kernel: %v)", seed, Vector())
	r := rand.New(rand.NewPCG(seed, 2))
	for round := 0; round < 300; round++ {
		size := r.IntN(64 << 10)
		if round%10 == 0 {
			size = r.IntN(300)
		}
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		dst := make([]byte, size)
		var f Folder
		if round%3 == 0 {
			f.Reset() // a used-looking Folder must behave as new after Reset
		}
		off := 0
		for off+BlockSize <= size && r.IntN(20) != 0 {
			n := r.IntN((size-off)/BlockSize+1) * BlockSize
			if r.IntN(2) == 0 {
				copy(dst[off:off+n], src[off:off+n])
				f.Blocks(dst[off : off+n])
			} else {
				extra := r.IntN(BlockSize) // a ragged source: only whole blocks are taken
				end := min(off+n+extra, size)
				if got := f.CopyBlocks(dst[off:], src[off:end]); got != (end-off)&^(BlockSize-1) {
					t.Fatalf("round %d: CopyBlocks took %d of %d", round, got, end-off)
				} else {
					n = got
				}
			}
			off += n
			if f.Len() != off {
				t.Fatalf("round %d: Len %d, want %d", round, f.Len(), off)
			}
		}
		copy(dst[off:], src[off:])
		if !bytes.Equal(dst, src) {
			t.Fatalf("round %d: copies differ from the source", round)
		}
		want := crc32.Checksum(src, table)
		if got := f.Sum(dst[off:]); got != want {
			t.Fatalf("round %d: %d bytes, %d folded: Sum %#x, want %#x", round, size, off, got, want)
		}
		if got := f.Sum(dst[off:]); got != want {
			t.Fatalf("round %d: a second Sum differs", round)
		}
	}
}

func TestFolderRejectsPartialBlocks(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Blocks of 65 bytes did not panic")
		}
	}()
	var f Folder
	f.Blocks(make([]byte, 65))
}

func TestCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for i := 0; i < 500; i++ {
		a := r.IntN(len(buf))
		b := a + r.IntN(len(buf)-a+1)
		if i < 20 {
			b = a + i // short second parts, including empty
		}
		want := crc32.Checksum(buf[:b], table)
		got := Combine(crc32.Checksum(buf[:a], table), crc32.Checksum(buf[a:b], table), b-a)
		if got != want {
			t.Fatalf("Combine at %d of %d: %#x, want %#x", a, b, got, want)
		}
	}
}

// BenchmarkCopyFold compares a copy followed by a checksum, a copy alone, and CopyBlocks.
func BenchmarkCopyFold(b *testing.B) {
	for _, n := range []int{1 << 10, 64 << 10, 1 << 20} {
		src, dst := make([]byte, n), make([]byte, n)
		b.Run(fmt.Sprintf("size=%dKiB/copy+checksum", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				copy(dst, src)
				Checksum(dst)
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/copy", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				copy(dst, src)
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/folder", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			var f Folder
			for b.Loop() {
				f.Reset()
				f.CopyBlocks(dst, src)
				f.Sum(nil)
			}
		})
	}
}
