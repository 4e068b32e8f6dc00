//go:build amd64 && !purego

package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// TestKernelsAPI checks Kernels and SetKernel: the kernel in use first, none last, every
// listed kernel selectable and restored, and others refused.
func TestKernelsAPI(t *testing.T) {
	ks := Kernels()
	t.Logf("kernels %v", ks)
	if ks[0] != Kernel() || ks[len(ks)-1] != "none" {
		t.Fatalf("Kernels() = %v with %s in use", ks, Kernel())
	}
	for _, name := range []string{"bogus", "sse", ""} {
		if _, err := SetKernel(name); err == nil {
			t.Fatalf("SetKernel(%q) accepted", name)
		}
	}
	for _, name := range []string{"avx512", "avx2", "pclmul"} {
		if slices.Contains(ks, name) {
			continue
		}
		if _, err := SetKernel(name); err == nil {
			t.Fatalf("SetKernel(%q) accepted, Kernels() = %v", name, ks)
		}
	}
	was := Kernel()
	for _, name := range ks {
		restore, err := SetKernel(name)
		if err != nil {
			t.Fatal(err)
		}
		if Kernel() != name {
			t.Fatalf("Kernel() = %s after SetKernel(%s)", Kernel(), name)
		}
		restore()
		if Kernel() != was {
			t.Fatalf("Kernel() = %s after restore, want %s", Kernel(), was)
		}
	}
}

// TestKernelsFollowGODEBUG runs this test binary again with features turned off through
// GODEBUG, and requires Kernels to list only what golang.org/x/sys/cpu then reports: with
// AVX2 off, neither the AVX2 kernel nor the pclmul one (whose copies are on 256-bit
// registers), even on a CPU with AVX-512 (where it would be detected first).
func TestKernelsFollowGODEBUG(t *testing.T) {
	if os.Getenv("CRC32C_TEST_CHILD") == "1" {
		t.Logf("GODEBUG=%s: AVX2 %v, AVX-512 %v, kernels %v", os.Getenv("GODEBUG"), cpu.X86.HasAVX2, cpu.X86.HasAVX512F, Kernels())
		if !cpu.X86.HasAVX2 && (slices.Contains(Kernels(), "avx2") || slices.Contains(Kernels(), "pclmul")) {
			t.Fatalf("AVX2 is off but Kernels() = %v", Kernels())
		}
		if !cpu.X86.HasAVX512F && slices.Contains(Kernels(), "avx512") {
			t.Fatalf("AVX-512 is off but Kernels() = %v", Kernels())
		}
		for _, name := range []string{"avx512", "avx2", "pclmul"} {
			if _, err := SetKernel(name); err == nil && !slices.Contains(Kernels(), name) {
				t.Fatalf("SetKernel(%q) accepted, Kernels() = %v", name, Kernels())
			}
		}
		return
	}
	if !slices.Contains(Kernels(), "avx2") {
		t.Skipf("this CPU runs %v: nothing to turn off", Kernels())
	}
	for _, godebug := range []string{"cpu.avx2=off", "cpu.avx512f=off", "cpu.avx512f=off,cpu.avx2=off"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKernelsFollowGODEBUG$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "CRC32C_TEST_CHILD=1", "GODEBUG="+godebug)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "kernels [") {
			t.Fatalf("GODEBUG=%s: %v\n%s", godebug, err, out)
		}
		t.Logf("GODEBUG=%s:\n%s", godebug, out)
	}
}

// TestPCLMULSharesAVX2State checks what fold_amd64.h says of the pclmul kernel's state: the
// AVX2 kernel's layout, byte for byte. Blocks folded under either kernel, in any mix, reduce
// under either to the checksum.
func TestPCLMULSharesAVX2State(t *testing.T) {
	ks := Kernels()
	if !slices.Contains(ks, "avx2") || !slices.Contains(ks, "pclmul") {
		t.Skipf("this CPU runs %v", ks)
	}
	seed := testseed.Get(t)
	r := rand.New(rand.NewPCG(seed, 77))
	pick := func() string { return []string{"avx2", "pclmul"}[r.IntN(2)] }
	was := Kernel()
	defer func() {
		if _, err := SetKernel(was); err != nil {
			t.Fatal(err)
		}
	}()
	for round := 0; round < 200; round++ {
		src := make([]byte, r.IntN(16<<10))
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		var f Folder
		off := 0
		for off+BlockSize <= len(src) && r.IntN(8) != 0 {
			if _, err := SetKernel(pick()); err != nil {
				t.Fatal(err)
			}
			n := (1 + r.IntN((len(src)-off)/BlockSize)) * BlockSize
			f.Blocks(src[off : off+n])
			off += n
		}
		if _, err := SetKernel(pick()); err != nil {
			t.Fatal(err)
		}
		if got, want := f.Sum(src[off:]), crc32.Checksum(src, table); got != want {
			t.Fatalf("round %d: %d bytes, %d folded, summed under %s: %#x, want %#x", round, len(src), off, Kernel(), got, want)
		}
	}
}
