//go:build !amd64 || purego

package batchfmt

var recordKernel = false

func encodeRecords(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int) {
	panic("batchfmt: no record kernel on this platform")
}

func sizeRecords(recs []Record, metas []recMeta) (metered, wire, sized int) {
	panic("batchfmt: no record kernel on this platform")
}
