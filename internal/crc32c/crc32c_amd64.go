//go:build amd64 && !purego

package crc32c

import "golang.org/x/sys/cpu"

var useVector = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ

// updateVector folds p into crc, which is the running value already inverted (as the
// CRC32 instruction keeps it), and returns the new running value. len(p) must be at least
// 256 and a multiple of 64.
//
//go:noescape
func updateVector(crc uint32, p []byte) uint32
