//go:build !amd64 || purego

package crc32c

import "fmt"

const level = levelNone

const useClmul = false

func updateVector(crc uint32, p []byte) (uint32, int) {
	panic("crc32c: no vector kernel on this platform")
}

func foldBlocks(acc *[256]byte, p []byte) { panic("crc32c: no vector kernel on this platform") }

func reduceBlock(acc *[256]byte) uint32 { panic("crc32c: no vector kernel on this platform") }

func shiftClmul(reg uint32, n uint64, tab *[maxShiftBits]uint32) uint32 {
	panic("crc32c: no vector kernel on this platform")
}

// Kernels lists the kernels this build can run: "none" alone.
func Kernels() []string { return []string{"none"} }

// SetKernel selects a kernel by its Kernel name, for tests and benchmarks; only "none" is
// built here.
func SetKernel(name string) (restore func(), err error) {
	if name != "none" {
		return nil, fmt.Errorf("crc32c: kernel %q: this build runs %v", name, Kernels())
	}
	return func() {}, nil
}
