//go:build unix

package batchfmt

import (
	"bytes"
	"syscall"
	"testing"

	"github.com/sluice-dev/sluice/internal/crc32c"
)

// TestRecordKernelReadsNoFurther places every name, value and body so that it ends right
// before an unmapped page: a load past any of them (the AVX-512 kernel moves the last bytes
// of a piece with a masked 64-byte load, the AVX2 one with overlapping loads) faults and
// fails the test.
func TestRecordKernelReadsNoFurther(t *testing.T) { eachKernel(t, testRecordKernelReadsNoFurther) }

func testRecordKernelReadsNoFurther(t *testing.T) {
	mem, _ := guardedPages(t, 1)
	for i := range mem {
		mem[i] = byte(i * 7)
	}
	atEnd := func(n int) []byte { return mem[len(mem)-n : len(mem) : len(mem)] }
	for n := 0; n <= 600; n++ {
		for field := 0; field < 4; field++ {
			name, value, body := withLength(field, n, atEnd, atEnd(1), atEnd(0), atEnd(0))
			in := AppendInput{Records: []Record{{Headers: []Header{{Name: name, Value: value}}, Body: body}}}
			objs := encodeBothWays(t, in)
			if !bytes.Equal(objs[0], objs[1]) {
				t.Fatalf("pieces of %d bytes (field %d): the record kernel's object differs from the portable path's", n, field)
			}
		}
	}
}

// guardedPages maps pages of memory followed by an unmapped page, for tests that a kernel
// reads or writes nothing past a buffer; it skips the test where mmap or mprotect fails.
func guardedPages(t *testing.T, pages int) (mem []byte, pg int) {
	pg = syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, (pages+1)*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[pages*pg:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	return mem[:pages*pg], pg
}

// TestRecordKernelWritesNoFurther calls each record kernel, in both modes, with its frames
// ending kernelSlack bytes before an unmapped page for AVX-512 and right before it for AVX2
// (which writes nothing past a piece): a store past that faults and fails the test.
func TestRecordKernelWritesNoFurther(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		if !recordKernel {
			t.Skip()
		}
		mem, _ := guardedPages(t, 4)
		src := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuv"), 100)
		for n := 0; n <= 600; n++ {
			recs := []Record{{HasTimestamp: n%2 == 0, Timestamp: uint64(n), Headers: []Header{{Name: src[:1+n%5], Value: src[:n]}}, Body: src[:n]}}
			metas, wire := kernelMetas(recs)
			slack := kernelSlackInUse()
			w := 13
			dst := mem[len(mem)-slack-wire-w:]
			var f crc32c.Folder
			if written, _, _, _ := encodeRecords(f.State(), &dst[0], w, w+wire, recs, metas); written != w+wire {
				t.Fatalf("n %d: written %d want %d", n, written, w+wire)
			}
			// And the sizing mode.
			var g crc32c.Folder
			written, _, _, done := encodeRecords(g.State(), &dst[0], w, w+wire, recs, nil)
			if written != w+wire || done != 1 {
				t.Fatalf("n %d: sizing mode: written %d done %d want %d", n, written, done, w+wire)
			}
		}
	})
}
