//go:build unix

package batchfmt

import (
	"bytes"
	"syscall"
	"testing"
)

// TestRecordKernelReadsNoFurther places every name, value and body so that it ends right
// before an unmapped page: a load past any of them (the kernel moves the last bytes of a
// piece with a masked 64-byte load) faults and fails the test.
func TestRecordKernelReadsNoFurther(t *testing.T) { eachKernel(t, testRecordKernelReadsNoFurther) }

func testRecordKernelReadsNoFurther(t *testing.T) {
	pg := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[pg:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	for i := range pg {
		mem[i] = byte(i)
	}
	atEnd := func(n int) []byte { return mem[pg-n : pg : pg] }
	for _, n := range []int{0, 1, 5, 63, 64, 65, 255, 256, 257, 1000} {
		in := AppendInput{Records: []Record{
			{Headers: []Header{{Name: atEnd(max(n, 1)), Value: atEnd(n)}}, Body: atEnd(n)},
		}}
		objs := encodeBothWays(t, in)
		if !bytes.Equal(objs[0], objs[1]) {
			t.Fatalf("pieces of %d bytes: the record kernel's object differs from the portable path's", n)
		}
	}
}
