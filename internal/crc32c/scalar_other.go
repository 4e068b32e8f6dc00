//go:build !arm64 || purego

package crc32c

import "hash/crc32"

// updateScalar is crc32.Update with this package's table: hash/crc32's own code is the
// fastest scalar path here (on amd64 it already runs three CRC32 chains side by side).
func updateScalar(crc uint32, p []byte) uint32 { return crc32.Update(crc, table, p) }
