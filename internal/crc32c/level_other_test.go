//go:build !amd64 || purego

package crc32c

import "testing"

// eachLevel runs f as a subtest with the only kernel there is here: none (hash/crc32).
func eachLevel[T interface {
	testing.TB
	Run(string, func(T)) bool
}](t T, f func(T)) {
	t.Run(Kernel(), f)
}
