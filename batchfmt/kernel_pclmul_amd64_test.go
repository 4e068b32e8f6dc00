//go:build amd64 && !purego

package batchfmt

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/internal/crc32c"
)

// TestPCLMULRecordKernelOnAVX2State: a Folder with a non-zero state folded under avx2, then
// encodeRecordsP (long pieces, so FOLDP runs inside COPY's 256-byte loop and in
// recordFold/drain, with the state in X1-X4 and X9-X12 throughout), then summed under avx2
// or pclmul: the record kernel keeps the state and the layout the two kernels share.
func TestPCLMULRecordKernelOnAVX2State(t *testing.T) {
	ks := crc32c.Kernels()
	if !slices.Contains(ks, "avx2") || !slices.Contains(ks, "pclmul") {
		t.Skipf("cpu runs %v", ks)
	}
	was := crc32c.Kernel()
	defer func() { _, _ = crc32c.SetKernel(was) }()
	r := rand.New(rand.NewPCG(testSeed(t), 12))
	for round := 0; round < 300; round++ {
		var recs []Record
		for i := 1 + r.IntN(6); i > 0; i-- {
			rec := Record{HasTimestamp: r.IntN(2) == 0, Timestamp: r.Uint64()}
			for h := r.IntN(3); h > 0; h-- {
				rec.Headers = append(rec.Headers, Header{Name: randBytes(r, 1+r.IntN(700)), Value: randBytes(r, r.IntN(3000))})
			}
			rec.Body = randBytes(r, r.IntN(5000))
			recs = append(recs, rec)
		}
		want := portableFrames(recs)
		metas, wire := kernelMetas(recs)
		pre := 256 * (1 + r.IntN(8))
		w := r.IntN(600)
		buf := make([]byte, pre+w+wire+64)
		for i := 0; i < pre+w; i++ {
			buf[i] = byte(r.Uint32())
		}
		for _, mode := range []string{"metas", "sizing"} {
			var f crc32c.Folder
			if _, err := crc32c.SetKernel("avx2"); err != nil {
				t.Fatal(err)
			}
			f.Blocks(buf[:pre])
			if _, err := crc32c.SetKernel("pclmul"); err != nil {
				t.Fatal(err)
			}
			ms, end := metas, pre+w+wire
			if mode == "sizing" {
				ms = nil
			}
			written, folded, _, _ := encodeRecordsP(f.State(), &buf[pre], w, end-pre, recs, ms)
			if written != w+wire || !bytes.Equal(buf[pre+w:pre+written], want) {
				t.Fatalf("round %d %s: written %d, want %d (or frames differ)", round, mode, written, w+wire)
			}
			f.Advance(folded)
			k := []string{"avx2", "pclmul"}[round%2]
			if _, err := crc32c.SetKernel(k); err != nil {
				t.Fatal(err)
			}
			if got, wantSum := f.Sum(buf[pre+folded:pre+written]), crc32.Checksum(buf[:pre+written], castagnoli); got != wantSum {
				t.Fatalf("round %d %s (sum under %s): %08x, want %08x", round, mode, k, got, wantSum)
			}
		}
	}
}
