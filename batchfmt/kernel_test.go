package batchfmt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/sluice-dev/sluice/internal/crc32c"
)

// kernelEnv names the environment variable that selects the checksum kernel (and the record
// kernel that goes with it) for the whole of this package's tests and benchmarks, one of
// crc32c.Kernels: SLUICE_TEST_KERNEL=pclmul runs everything on the kernel for CPUs without
// VPCLMULQDQ, which GODEBUG cannot select on a CPU that has it.
const kernelEnv = "SLUICE_TEST_KERNEL"

func init() {
	name := os.Getenv(kernelEnv)
	if name == "" {
		return
	}
	if _, err := crc32c.SetKernel(name); err != nil {
		panic(fmt.Sprintf("%s=%s: %v", kernelEnv, name, err))
	}
	recordKernel = name != "none"
}

// eachKernel runs f as a subtest under each checksum kernel this CPU runs
// (crc32c.Kernels), with the record kernel that goes with it: AVX-512, AVX2, pclmul, or
// none (the portable path).
func eachKernel(t *testing.T, f func(*testing.T)) {
	was := recordKernel
	defer func() { recordKernel = was }()
	for _, name := range crc32c.Kernels() {
		restore, err := crc32c.SetKernel(name)
		if err != nil {
			t.Fatal(err)
		}
		recordKernel = name != "none"
		t.Run(name, f)
		restore()
	}
}

// kernelSlackInUse is how far past its end the record kernel in use may write: kernelSlack
// for AVX-512's (its tails are stored whole), nothing for the AVX2 and pclmul kernels'
// copies (encode_copy_avx2_amd64.h) or the portable path.
func kernelSlackInUse() int {
	if crc32c.Kernel() == "avx512" {
		return kernelSlack
	}
	return 0
}

// TestRecordKernelMatchesGo encodes the same random appends with the record kernel and with
// the portable path (heads and pieces, gathered and folded by crc32c.Folder) and requires
// the same bytes: escapes, command records, empty and long bodies, timestamps, and objects
// finished mid-way. Where the kernel is not built, both runs take the portable path.
func TestRecordKernelMatchesGo(t *testing.T) { eachKernel(t, testRecordKernelMatchesGo) }

func testRecordKernelMatchesGo(t *testing.T) {
	seed := testSeed(t)
	t.Logf("record kernel: %v (checksum kernel %s)", recordKernel, crc32c.Kernel())
	r := rand.New(rand.NewPCG(seed, 11))
	kernelOn := recordKernel
	defer func() { recordKernel = kernelOn }()
	for round := 0; round < 60; round++ {
		var ins []AppendInput
		for a := 0; a < 1+r.IntN(5); a++ {
			in := randAppend(r, round%4 == 0)
			if r.IntN(2) == 0 { // sizes at the kernel's edges: 64-byte moves, 256-byte blocks
				edge := func() int { return max(0, []int{64, 256, 1024}[r.IntN(3)]*r.IntN(4)+r.IntN(3)-1) }
				for i := range in.Records {
					rec := &in.Records[i]
					if len(rec.Headers) == 1 && len(rec.Headers[0].Name) == 0 {
						continue // a command record's body is fixed by its command
					}
					rec.Body = randBytes(r, edge())
					if r.IntN(3) == 0 {
						rec.Body = randBytes(r, r.IntN(5000)) // long bodies, many blocks each
					}
					var h *Header
					var was Header
					if len(rec.Headers) > 0 && len(rec.Headers) < 10 {
						h = &rec.Headers[r.IntN(len(rec.Headers))]
						was = *h
						h.Name, h.Value = randBytes(r, 1+edge()), randBytes(r, edge())
					}
					if in.MeteredSize() > MaxAppendBytes { // keep the append valid
						rec.Body = nil
						if h != nil {
							*h = was
						}
					}
				}
			}
			ins = append(ins, in)
		}
		sameBothWays(t, fmt.Sprintf("round %d", round), ins, r.IntN(len(ins)+1)) // Finish at the cut too, then go on
	}
}

// TestRecordKernelStopsAtEnd hands the kernel frames whose sizes disagree with the records
// (as if a record changed after it was sized): it must report the mismatch and write
// nothing past the end it was given plus the documented slack.
func TestRecordKernelStopsAtEnd(t *testing.T) { eachKernel(t, testRecordKernelStopsAtEnd) }

func testRecordKernelStopsAtEnd(t *testing.T) {
	if !recordKernel {
		t.Skip("no record kernel on this platform")
	}
	recs := []Record{
		{Headers: []Header{{Name: []byte("k"), Value: bytes.Repeat([]byte("v"), 300)}}, Body: bytes.Repeat([]byte("b"), 700)},
		{Body: bytes.Repeat([]byte("c"), 2000)},
	}
	for _, shrink := range []int{1, 2, 5, 100, 600, 1000} {
		var metas []recMeta
		wire := 0
		for i := range recs {
			m, w, cmd := recordSize(&recs[i])
			magic, varlen := frameLead(m, cmd, false)
			if i == len(recs)-1 {
				w -= shrink // the last record now "has" more bytes than its frame holds
			}
			metas = append(metas, recMeta{lead: uint32(magic), leadN: uint32(1 + varlen), wire: uint32(max(w, 4))})
			wire += int(metas[i].wire)
		}
		buf := bytes.Repeat([]byte{0xA5}, wire+kernelSlack+256)
		var f crc32c.Folder
		written, _, _, _ := encodeRecords(f.State(), &buf[0], 0, wire, recs, metas)
		if written != -1 {
			t.Fatalf("shrink %d: kernel wrote %d of %d bytes and reported no mismatch", shrink, written, wire)
		}
		for i := wire + kernelSlack; i < len(buf); i++ {
			if buf[i] != 0xA5 {
				t.Fatalf("shrink %d: byte %d past the end plus slack was written", shrink, i-wire)
			}
		}
	}
}

// kernelMetas sizes recs as Encoder.add does for the record kernel.
func kernelMetas(recs []Record) ([]recMeta, int) {
	var metas []recMeta
	wire := 0
	for i := range recs {
		m, w, cmd := recordSize(&recs[i])
		metas = append(metas, newRecMeta(m, w, cmd, recs[i].HasTimestamp))
		wire += w
	}
	return metas, wire
}

// TestRecordKernelRefusesChangedRecords hands the kernel records that no longer match the
// sizes it is given, as if another goroutine had changed them after sizing: headers that
// appeared (their length fields then end past the frame, which only a signed bound test
// catches), and more records than metas. It must refuse or stop short, write nothing past
// the end plus the slack, and leave the checksum state alone when it refuses.
func TestRecordKernelRefusesChangedRecords(t *testing.T) {
	eachKernel(t, testRecordKernelRefusesChangedRecords)
}

func testRecordKernelRefusesChangedRecords(t *testing.T) {
	if !recordKernel {
		t.Skip("no record kernel on this platform")
	}
	guard := func(t *testing.T, buf []byte, end int) {
		t.Helper()
		for i := end + kernelSlack; i < len(buf); i++ {
			if buf[i] != 0xA5 {
				t.Fatalf("byte %d past the end was written", i-end)
			}
		}
	}
	for _, nl := range []int{1, 63, 1000} {
		recs := []Record{{Headers: []Header{{Name: bytes.Repeat([]byte("k"), nl), Value: []byte("v")}}}}
		metas, wire := kernelMetas([]Record{{}}) // sized without the header
		buf := bytes.Repeat([]byte{0xA5}, wire+kernelSlack+2048)
		var f crc32c.Folder
		before := *f.State()
		if written, _, _, _ := encodeRecords(f.State(), &buf[0], 0, wire, recs, metas); written != -1 {
			t.Fatalf("name of %d bytes: the kernel wrote %d bytes and reported no mismatch", nl, written)
		}
		guard(t, buf, wire)
		if *f.State() != before {
			t.Fatalf("name of %d bytes: the checksum state changed on a refusal", nl)
		}
	}
	// One record more than metas, with room past its end holding what a reused scratch
	// could: the kernel must take only the records both slices describe.
	recs := []Record{{Body: []byte("abc")}, {HasTimestamp: true, Timestamp: ^uint64(0)}}
	metas, wire := kernelMetas(recs[:1])
	backing := append(metas, recMeta{leadN: 4000, ts: 1})
	buf := bytes.Repeat([]byte{0xA5}, wire+8192)
	var f crc32c.Folder
	if written, _, _, _ := encodeRecords(f.State(), &buf[0], 0, wire, recs, backing[:1]); written != wire {
		t.Fatalf("more records than metas: written %d, want the %d bytes of the first", written, wire)
	}
	guard(t, buf, wire)
}

// TestRecordKernelEscapedNames covers header names whose length needs the 0xFFFF escape,
// which random records never reach.
func TestRecordKernelEscapedNames(t *testing.T) { eachKernel(t, testRecordKernelEscapedNames) }

func testRecordKernelEscapedNames(t *testing.T) {
	for _, nl := range []int{0xFFFE, 0xFFFF, 0x10000, 200000} {
		in := AppendInput{Records: []Record{
			{HasTimestamp: true, Timestamp: 0x0102030405060708, Headers: []Header{{Name: bytes.Repeat([]byte("n"), nl), Value: []byte("v")}}, Body: []byte("b")},
			{},
		}}
		objs := encodeBothWays(t, in)
		if !bytes.Equal(objs[0], objs[1]) {
			t.Fatalf("name of %d bytes: the record kernel's object differs from the portable path's", nl)
		}
		b, err := decodeChecked(objs[0])
		if err != nil {
			t.Fatal(err)
		}
		checkBatch(t, b, []AppendInput{in}, nil)
	}
}

// encodeBothWays encodes one append into an uncompressed object with the record kernel
// (where it is built; else the portable path again) and with the portable path.
func encodeBothWays(t *testing.T, in AppendInput) [2][]byte {
	t.Helper()
	kernelOn := recordKernel
	defer func() { recordKernel = kernelOn }()
	var objs [2][]byte
	for i, k := range []bool{kernelOn, false} {
		recordKernel = k
		e := NewEncoder(CompressionNone)
		if e.Add(&in) < 0 {
			t.Fatal(e.Err())
		}
		obj, err := e.Finish()
		if err != nil {
			t.Fatal(err)
		}
		objs[i] = bytes.Clone(obj)
	}
	return objs
}

// FuzzRecordKernel builds an append from the fuzzer's bytes (record count, header counts,
// name, value and body lengths, timestamps, all taken from the input) and requires the
// record kernel and the portable path to write the same object, which must decode to the
// same records.
func FuzzRecordKernel(f *testing.F) {
	f.Add([]byte{3, 1, 0x80, 5, 2, 9, 200, 0, 70, 1, 1, 64, 255})
	f.Add(bytes.Repeat([]byte{0x41}, 300))
	f.Add(append([]byte{3, 0x81}, bytes.Repeat([]byte{5, 1, 9, 2, 0x80}, 60)...)) // 35 records: sized by the kernel
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int { // the next input byte, or 0 past the end
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return int(b)
		}
		filler := bytes.Repeat([]byte("0123456789abcdef"), 300)
		piece := func(n int) []byte { return filler[:n%len(filler)] }
		var in AppendInput
		n := 1 + next()%8
		if len(data) > 0 && data[0]&0x80 != 0 {
			n += fusedMinRecords // long enough for the kernel's own sizing (addFused)
		}
		for ; n > 0; n-- {
			var r Record
			if ts := next(); ts&1 == 1 {
				r.HasTimestamp, r.Timestamp = true, uint64(ts)<<40|uint64(next())
			}
			for h := next() % 4; h > 0; h-- {
				r.Headers = append(r.Headers, Header{Name: piece(1 + next()*3), Value: piece(next() * 7)})
			}
			r.Body = piece(next() * 13)
			in.Records = append(in.Records, r)
		}
		if err := in.Validate(); err != nil {
			t.Skip()
		}
		objs := encodeBothWays(t, in)
		if !bytes.Equal(objs[0], objs[1]) {
			t.Fatalf("the record kernel's object differs from the portable path's (%d vs %d bytes)", len(objs[0]), len(objs[1]))
		}
		b, err := decodeChecked(objs[0])
		if err != nil {
			t.Fatal(err)
		}
		checkBatch(t, b, []AppendInput{in}, nil)
	})
}

// TestSizeRecordsMatchesGo compares the assembly sizing with recordSize and frameLead on
// random records, on metered sizes at the edges of the 1-, 2- and 3-byte fields, on escaped
// counts and lengths, and on appends holding a command record, where it must stop before it
// with the totals of the records before it.
func TestSizeRecordsMatchesGo(t *testing.T) {
	if !recordKernel {
		t.Skip("no record kernel on this platform")
	}
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 12))
	edges := []Record{
		{Body: make([]byte, 255-8)}, {Body: make([]byte, 256-8)},
		{Body: make([]byte, 0xFFFF-8), HasTimestamp: true}, {Body: make([]byte, 0x10000-8)},
		{Headers: make([]Header, 0xFFFF)}, {Headers: []Header{{Name: make([]byte, 0xFFFF), Value: make([]byte, 0xFFFE)}}},
		{Headers: []Header{{Name: []byte("n"), Value: make([]byte, 0x10000)}}},
	}
	for i := range edges[4].Headers {
		edges[4].Headers[i].Name = []byte("h")
	}
	for round := 0; round < 300; round++ {
		var recs []Record
		for range 1 + r.IntN(40) {
			if r.IntN(8) == 0 {
				recs = append(recs, edges[r.IntN(len(edges))])
				continue
			}
			recs = append(recs, randRecord(r, r.IntN(4) == 0))
		}
		want, _ := kernelMetas(recs)
		stop, metered, wire := len(recs), 0, 0
		for i := range recs {
			if _, _, cmd := recordSize(&recs[i]); cmd {
				stop = i
				break
			}
			m, w, _ := recordSize(&recs[i])
			metered += m
			wire += w
		}
		metas := make([]recMeta, len(recs)+1) // one more than needed: only recs count
		gm, gw, sized := sizeRecords(recs, metas)
		if sized != stop || gm != metered || gw != wire {
			t.Fatalf("round %d: sized %d records, %d metered, %d wire; want %d, %d, %d", round, sized, gm, gw, stop, metered, wire)
		}
		for i := 0; i < stop; i++ {
			if metas[i] != want[i] {
				t.Fatalf("round %d: record %d: meta %+v, want %+v", round, i, metas[i], want[i])
			}
		}
		if metas[len(recs)] != (recMeta{}) {
			t.Fatalf("round %d: a meta past the records was written", round)
		}
		if _, _, n := sizeRecords(recs, metas[:len(recs)/2]); n > len(recs)/2 {
			t.Fatalf("round %d: sized %d records into %d metas", round, n, len(recs)/2)
		}
	}
}

// TestFusedKernel covers appends long enough for the record kernel to size the records as
// it writes them (addFused): objects of several such appends, whose totals the kernel has
// often folded as zeros before they were known (the checksum is patched), finished
// part-way, must equal the portable path's byte for byte. So must appends where the
// kernel stops short and the two-pass path takes over: a command record among them, a
// buffer too small, and a metered total over the limit, which must be refused with the
// same error either way.
func TestFusedKernel(t *testing.T) { eachKernel(t, testFusedKernel) }

func testFusedKernel(t *testing.T) {
	if !recordKernel {
		t.Skip("no record kernel on this platform")
	}
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 13))
	kernelOn := recordKernel
	defer func() { recordKernel = kernelOn }()
	fusedTotal, stops := 0, 0
	for round := 0; round < 150; round++ {
		var ins []AppendInput
		for a := 0; a < 1+r.IntN(4); a++ {
			var in AppendInput
			n := fusedMinRecords + r.IntN(100)
			if r.IntN(10) == 0 {
				n = fusedMinRecords - 1 - r.IntN(3) // just below: the two-pass path
			}
			for range n {
				rec := randRecord(r, false)
				if rec.IsCommand() && r.IntN(100) != 0 {
					rec = Record{Body: randBytes(r, r.IntN(3000))}
				}
				in.Records = append(in.Records, rec)
			}
			randConditions(r, &in)
			if in.Validate() != nil {
				continue
			}
			ins = append(ins, in)
		}
		if len(ins) == 0 {
			continue
		}
		fused := sameBothWays(t, fmt.Sprintf("round %d", round), ins, r.IntN(len(ins)+1))
		fusedTotal += fused
		for _, in := range ins {
			if len(in.Records) >= fusedMinRecords {
				for i := range in.Records {
					if in.Records[i].IsCommand() {
						stops++
						break
					}
				}
			}
		}
	}
	if fusedTotal == 0 || stops == 0 {
		t.Fatalf("%d appends took the fused path and %d stopped at a command record: the test missed its cases", fusedTotal, stops)
	}
	t.Logf("%d appends fused, %d with a command record", fusedTotal, stops)

	// Too little room: a new encoder's buffer holds 64 KiB; the kernel stops, the two-pass
	// path grows the buffer, and the next append fits.
	big := AppendInput{}
	for range 200 {
		big.Records = append(big.Records, Record{HasTimestamp: true, Timestamp: 7, Body: randBytes(r, 2000)})
	}
	got, fused, err := encodeCut(true, []AppendInput{big, big}, -1)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := encodeCut(false, []AppendInput{big, big}, -1)
	if !bytes.Equal(got[0], want[0]) || fused != 1 {
		t.Fatalf("growing: objects equal %v, %d appends fused (want 1: the second)", bytes.Equal(got[0], want[0]), fused)
	}

	// Over the limit: the same error as Validate's, and nothing of the append kept.
	over := AppendInput{}
	for range 40 {
		over.Records = append(over.Records, Record{Body: make([]byte, MaxAppendBytes/39)})
	}
	_, _, errK := encodeCut(true, []AppendInput{over}, -1)
	_, _, errP := encodeCut(false, []AppendInput{over}, -1)
	var ae *AppendError
	if errK == nil || errP == nil || errK.Error() != errP.Error() || !errors.As(errK, &ae) {
		t.Fatalf("an append over %d bytes: kernel %v, portable %v", MaxAppendBytes, errK, errP)
	}
}

// TestFusedKernelEdges: appends the record kernel sizes as it writes that hold the
// 0xFFFF escapes (a header count, a name, values of 0xFFFF and 0x10000 bytes); appends
// whose totals the kernel folded only in part (the fold's edge inside the 8 bytes, after a
// padding append of every length); and a metered total of exactly MaxAppendBytes, which
// fits, against one byte more, which does not. All must match the portable path.
func TestFusedKernelEdges(t *testing.T) { eachKernel(t, testFusedKernelEdges) }

func testFusedKernelEdges(t *testing.T) {
	if !recordKernel {
		t.Skip("no record kernel on this platform")
	}
	kernelOn := recordKernel
	defer func() { recordKernel = kernelOn }()
	many := make([]Header, 0xFFFF)
	for i := range many {
		many[i] = Header{Name: []byte("h")}
	}
	for _, odd := range []Record{
		{Headers: many},
		{Headers: []Header{{Name: bytes.Repeat([]byte("n"), 0xFFFF), Value: []byte("v")}}},
		{HasTimestamp: true, Headers: []Header{{Name: []byte("n"), Value: bytes.Repeat([]byte("v"), 0xFFFF)}}},
		{Headers: []Header{{Name: []byte("n"), Value: bytes.Repeat([]byte("v"), 0x10000)}}, Body: []byte("b")},
	} {
		var in AppendInput
		for i := range 40 {
			if i == 7 {
				in.Records = append(in.Records, odd)
				continue
			}
			in.Records = append(in.Records, Record{Body: []byte("x")})
		}
		if fused := sameBothWays(t, "escapes", []AppendInput{in, in, in}, -1); fused == 0 {
			t.Fatalf("escapes: no append was sized by the kernel")
		}
	}
	small := AppendInput{Records: make([]Record, fusedMinRecords)} // 4-byte frames
	for pad := 0; pad < 600; pad++ {
		ins := []AppendInput{{Records: []Record{{Body: make([]byte, pad)}}}, small, small, small}
		for cut := 0; cut <= len(ins); cut++ {
			sameBothWays(t, fmt.Sprintf("padding %d, cut %d", pad, cut), ins, cut)
		}
	}
	exact := AppendInput{Records: make([]Record, 40)}
	for i := range exact.Records {
		exact.Records[i].Body = make([]byte, MaxAppendBytes/40-8)
	}
	exact.Records[0].Body = make([]byte, len(exact.Records[0].Body)+MaxAppendBytes-exact.MeteredSize())
	if exact.MeteredSize() != MaxAppendBytes {
		t.Fatalf("test setup: %d metered bytes", exact.MeteredSize())
	}
	if fused := sameBothWays(t, "exactly MaxAppendBytes", []AppendInput{exact, exact}, -1); fused == 0 {
		t.Fatalf("an append of exactly %d metered bytes was not sized by the kernel", MaxAppendBytes)
	}
	exact.Records[0].Body = append(exact.Records[0].Body, 0)
	if _, _, err := encodeCut(true, []AppendInput{exact}, -1); err == nil {
		t.Fatalf("an append of %d metered bytes was accepted", MaxAppendBytes+1)
	}
}

// encodeCut encodes ins into one object with the record kernel on or off, finishing it
// part-way before append cut as well (no cut if out of range), and returns the objects and
// how many appends the kernel sized as it wrote them. The caller restores recordKernel.
func encodeCut(kernel bool, ins []AppendInput, cut int) (objs [][]byte, fused int, err error) {
	recordKernel = kernel
	e := NewEncoder(CompressionNone)
	for i := range ins {
		if i == cut {
			obj, err := e.Finish()
			if err != nil {
				return nil, 0, err
			}
			objs = append(objs, bytes.Clone(obj))
		}
		if e.Add(&ins[i]) < 0 {
			return nil, 0, e.Err()
		}
	}
	obj, err := e.Finish()
	if err != nil {
		return nil, 0, err
	}
	return append(objs, bytes.Clone(obj)), e.fusedAppends, nil
}

// sameBothWays encodes ins with the record kernel and with the portable path, finished
// part-way before append cut as well, requires the same bytes and a decodable object
// holding ins, and returns how many appends the kernel sized as it wrote them.
func sameBothWays(t *testing.T, what string, ins []AppendInput, cut int) (fused int) {
	t.Helper()
	kernelOn := recordKernel
	defer func() { recordKernel = kernelOn }()
	got, fused, err := encodeCut(kernelOn, ins, cut)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want, _, err := encodeCut(false, ins, cut)
	if err != nil {
		t.Fatalf("%s: portable: %v", what, err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			at := -1
			for j := range min(len(got[i]), len(want[i])) {
				if got[i][j] != want[i][j] {
					at = j
					break
				}
			}
			t.Fatalf("%s: object %d (cut before append %d of %d, %d fused): the kernel's bytes differ from the portable path's (lengths %d, %d; first at %d)", what, i, cut, len(ins), fused, len(got[i]), len(want[i]), at)
		}
	}
	b, err := decodeChecked(got[len(got)-1])
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkBatch(t, b, ins, nil)
	return fused
}
