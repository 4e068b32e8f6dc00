//go:build amd64 && !purego

package batchfmt

import (
	"unsafe"

	"github.com/sluice-dev/sluice/internal/crc32c"
)

// The record kernel (encode_amd64.s) reads Records and Headers by these offsets; a change of
// either struct fails to compile here.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(Record{})-64]
	_ = [1]struct{}{}[unsafe.Offsetof(Record{}.Timestamp)]
	_ = [1]struct{}{}[unsafe.Offsetof(Record{}.Headers)-16]
	_ = [1]struct{}{}[unsafe.Offsetof(Record{}.Body)-40]
	_ = [1]struct{}{}[unsafe.Sizeof(Header{})-48]
	_ = [1]struct{}{}[unsafe.Offsetof(Header{}.Value)-24]
	_ = [1]struct{}{}[unsafe.Sizeof(recMeta{})-16]
	_ = [1]struct{}{}[unsafe.Offsetof(recMeta{}.lead)]
	_ = [1]struct{}{}[unsafe.Offsetof(recMeta{}.leadN)-4]
	_ = [1]struct{}{}[unsafe.Offsetof(recMeta{}.wire)-8]
	_ = [1]struct{}{}[unsafe.Offsetof(recMeta{}.ts)-12]
)

// recordKernel reports whether uncompressed appends are written by encodeRecords: wherever
// crc32c runs a vector kernel, whose checksum state the record kernels fold into.
var recordKernel = crc32c.Vector()

// encodeRecords writes the frames of recs to dst+w onwards and folds each whole 256-byte
// block of dst, from its start, into acc as it is written (as crc32c.Folder.Gather does).
// It writes nothing past dst+end plus kernelSlack bytes, which the caller must provide as
// spare capacity. It returns the offset after the last frame written and the bytes folded.
//
// With metas, it writes as many records as both recs and metas hold, as the metas
// describe; written == end unless a record's bytes disagree with its meta.
//
// Without metas (len(metas) == 0), it sizes each record itself as it goes, end being a
// limit rather than the exact end, and also returns the records' metered total and how
// many it wrote. It stops short (done < len(recs)), leaving acc as it was, before a record
// with an empty header name, before the metered total would exceed MaxAppendBytes, and
// before a frame that would pass end.
//
// In both modes written is -1 if a record changed while it was being written (a racing
// writer): its bytes disagree with the size the kernel wrote for it.
func encodeRecords(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int) {
	switch crc32c.Kernel() {
	case "avx2":
		return encodeRecordsY(acc, dst, w, end, recs, metas)
	case "pclmul":
		return encodeRecordsP(acc, dst, w, end, recs, metas)
	}
	return encodeRecords512(acc, dst, w, end, recs, metas)
}

// encodeRecords512 (encode_amd64.s) and encodeRecordsY (encode_avx2_amd64.s) are
// encodeRecords with AVX-512 and with AVX2, for crc32c's kernel of the same name.
//
//go:noescape
func encodeRecords512(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int)

//go:noescape
func encodeRecordsY(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int)

// encodeRecordsP (encode_pclmul_amd64.s) is encodeRecordsY with crc32c's pclmul kernel's
// fold, for CPUs without VPCLMULQDQ.
//
//go:noescape
func encodeRecordsP(acc *[256]byte, dst *byte, w, end int, recs []Record, metas []recMeta) (written, folded, metered, done int)

// sizeRecords sizes recs as recordSize and frameLead do and fills metas for encodeRecords,
// as many records as both slices hold, stopping before the first record with an empty
// header name (a command record, or an invalid one: the caller sizes and validates it).
// It returns the metered and frame totals of the records sized and their count. Metas are
// meaningful only if the metered total is at most MaxAppendBytes.
//
//go:noescape
func sizeRecords(recs []Record, metas []recMeta) (metered, wire, sized int)
