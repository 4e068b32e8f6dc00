package crc32c

import "testing"

// eachLevel runs f as a subtest once for every kernel this CPU can run, from the
// widest down to none (hash/crc32 alone), with that kernel selected.
func eachLevel[T interface {
	testing.TB
	Run(string, func(T)) bool
}](t T, f func(T)) {
	for _, name := range Kernels() {
		restore, err := SetKernel(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, f)
		restore()
	}
}
