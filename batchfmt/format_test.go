package batchfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestCompressionStrings(t *testing.T) {
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		got, err := ParseCompression(c.String())
		if err != nil || got != c {
			t.Fatalf("ParseCompression(%q) = %v, %v", c.String(), got, err)
		}
		txt, err := c.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Compression
		if err := back.UnmarshalText(txt); err != nil || back != c {
			t.Fatalf("text round trip of %v: %v %v", c, back, err)
		}
	}
	if CompressionNone.String() != "none" || CompressionZstd.String() != "zstd" || Compression(9).String() != "compression(9)" {
		t.Fatal("String")
	}
	_, err := ParseCompression("gzip")
	if !errors.Is(err, ErrUnknownCompression) || err.Error() != `batchfmt: unknown compression "gzip" (want "none" or "zstd")` {
		t.Fatalf("ParseCompression(gzip) = %v", err)
	}
	if _, err := Compression(9).MarshalText(); !errors.Is(err, ErrUnknownCompression) {
		t.Fatalf("MarshalText(9) = %v", err)
	}
	e := NewEncoder(Compression(9))
	if _, err := e.Finish(); !errors.Is(err, ErrUnknownCompression) {
		t.Fatalf("Finish with unknown compression = %v", err)
	}
}

// TestRoundTripProperty encodes random appends and checks that decoding returns them, with
// and without a random set of skipped appends.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 1))
	iters := 200
	if testing.Short() {
		iters = 40
	}
	for k := 0; k < iters; k++ {
		c := Compression(r.IntN(2))
		ins := make([]AppendInput, r.IntN(6))
		for i := range ins {
			ins[i] = randAppend(r, k%10 == 0)
		}
		obj := encode(t, c, ins)
		b, err := Decode(obj)
		if err != nil {
			t.Fatalf("iteration %d (%v, %d appends): %v", k, c, len(ins), err)
		}
		if b.Compression() != c {
			t.Fatalf("compression %v, want %v", b.Compression(), c)
		}
		checkBatch(t, b, ins, nil)
		skip := map[int]bool{}
		for i := range ins {
			skip[i] = r.IntN(3) == 0
		}
		checkBatch(t, b, ins, skip)
	}
}

func TestEncoderReuseAndSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 2))
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		e := NewEncoder(c)
		for round := 0; round < 3; round++ {
			e.Reset()
			if e.Len() != 0 || e.Records() != 0 || e.EncodedSize() != HeaderSize+TrailerSize {
				t.Fatalf("after Reset: len %d records %d size %d", e.Len(), e.Records(), e.EncodedSize())
			}
			var ins []AppendInput
			recs, metered := 0, 0
			for i := 0; i < 1+r.IntN(5); i++ {
				in := randAppend(r, false)
				ins = append(ins, in)
				recs += len(in.Records)
				metered += in.MeteredSize()
				// Reuse the input's storage after Add: the encoder must have copied it.
				cp := cloneAppend(in)
				e.Add(&in)
				scribble(&in)
				ins[len(ins)-1] = cp
			}
			if e.Len() != len(ins) || e.Records() != recs || e.MeteredBytes() != metered {
				t.Fatalf("Len %d Records %d Metered %d, want %d %d %d", e.Len(), e.Records(), e.MeteredBytes(), len(ins), recs, metered)
			}
			size := e.EncodedSize()
			obj, err := e.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if c == CompressionNone && len(obj) != size {
				t.Fatalf("EncodedSize %d, object %d bytes", size, len(obj))
			}
			b, err := Decode(obj)
			if err != nil {
				t.Fatal(err)
			}
			if b.PayloadSize() != size-HeaderSize-TrailerSize {
				t.Fatalf("payload %d, EncodedSize %d", b.PayloadSize(), size)
			}
			checkBatch(t, b, ins, nil)
		}
	}
}

func cloneAppend(in AppendInput) AppendInput {
	out := in
	out.Records = make([]Record, len(in.Records))
	for i, r := range in.Records {
		r.Body = bytes.Clone(r.Body)
		hs := make([]Header, len(r.Headers))
		for j, h := range r.Headers {
			hs[j] = Header{Name: bytes.Clone(h.Name), Value: bytes.Clone(h.Value)}
		}
		if r.Headers == nil {
			hs = nil
		}
		r.Headers = hs
		out.Records[i] = r
	}
	return out
}

func scribble(in *AppendInput) {
	for i := range in.Records {
		for j := range in.Records[i].Body {
			in.Records[i].Body[j] ^= 0x5A
		}
		for _, h := range in.Records[i].Headers {
			for j := range h.Value {
				h.Value[j] ^= 0x5A
			}
		}
	}
}

func TestEmptyObject(t *testing.T) {
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		b, err := Decode(encode(t, c, nil))
		if err != nil {
			t.Fatal(err)
		}
		if b.NumAppends() != 0 || b.NumRecords() != 0 || b.Iter(nil).Next() {
			t.Fatal("empty object is not empty")
		}
	}
}

func TestEncoderRejectsInvalidAppend(t *testing.T) {
	tooLong := strings.Repeat("t", 49)
	cases := []struct {
		name string
		in   AppendInput
		want string
	}{
		{"empty", AppendInput{}, "batchfmt: encoder: append 1: invalid append: an append must hold at least 1 record"},
		{"too many", AppendInput{Records: make([]Record, 1001)}, "batchfmt: encoder: append 1: invalid append: append holds 1001 records, more than the limit of 1000"},
		{"token", AppendInput{Records: []Record{{}}, FencingToken: &tooLong}, "batchfmt: encoder: append 1: invalid append: fencing token length (49) exceeds 48 bytes"},
		{"bytes", AppendInput{Records: []Record{{Body: make([]byte, 600<<10)}, {Body: make([]byte, 600<<10)}}}, "batchfmt: encoder: append 1: invalid append: append size in metered bytes (1228816) exceeds the limit of 1048576"},
		{"command", AppendInput{Records: []Record{{}, {Headers: []Header{{Value: []byte("nope")}}}}}, `batchfmt: encoder: append 1: invalid append: record 1: invalid record: unknown command "nope" (a header with an empty name makes a record a command record, fence or trim; other headers need a name)`},
	}
	for _, tc := range cases {
		e := NewEncoder(CompressionNone)
		good := AppendInput{Records: []Record{{Body: []byte("ok")}}}
		e.Add(&good)
		before := e.EncodedSize()
		if got := e.Add(&tc.in); got != -1 {
			t.Errorf("%s: Add = %d, want -1", tc.name, got)
		}
		if e.Len() != 1 || e.EncodedSize() != before {
			t.Errorf("%s: rejected append changed the encoder", tc.name)
		}
		_, err := e.Finish()
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Finish error %v, want %q", tc.name, err, tc.want)
		}
		if e.Err() == nil || e.Add(&good) != -1 {
			t.Errorf("%s: error is not sticky", tc.name)
		}
		e.Reset()
		if e.Add(&good) != 0 {
			t.Errorf("%s: Reset did not clear the error", tc.name)
		}
	}
}

// smallObject returns a small object with headers, a command, conditions and timestamps.
func smallObject(t testing.TB, c Compression) []byte {
	seq, tok := uint64(42), "fence-token"
	return encode(t, c, []AppendInput{
		{Records: []Record{
			{Timestamp: 1709481600000, HasTimestamp: true, Headers: []Header{{Name: []byte("k"), Value: []byte("v")}}, Body: []byte("hello")},
			FenceRecord("new"),
		}, MatchSeqNum: &seq, FencingToken: &tok},
		{Records: []Record{{Body: bytes.Repeat([]byte("z"), 40)}, TrimRecord(7)}},
	})
}

// TestBitFlips flips every bit, and then every whole byte, of small objects: each must fail
// with ErrCorrupt (CRC32C catches every burst of up to 32 bits).
func TestBitFlips(t *testing.T) {
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		obj := smallObject(t, c)
		if _, err := Decode(obj); err != nil {
			t.Fatal(err)
		}
		for i := range obj {
			for bit := 0; bit < 9; bit++ {
				mask := byte(1) << bit
				if bit == 8 {
					mask = 0xFF
				}
				obj[i] ^= mask
				_, err := Decode(obj)
				obj[i] ^= mask
				var ce *CorruptError
				if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || errors.Is(err, ErrInvalid) {
					t.Fatalf("%v: byte %d mask %#x: err = %v", c, i, mask, err)
				}
			}
		}
	}
}

func TestTruncationAndExtension(t *testing.T) {
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		obj := smallObject(t, c)
		for n := 0; n < len(obj); n++ {
			if _, err := Decode(obj[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v: prefix of %d bytes: %v", c, n, err)
			}
		}
		if _, err := Decode(append(bytes.Clone(obj), 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v: extended object decoded", c)
		}
	}
}

// reseal recomputes the CRC of an object whose bytes a test changed on purpose, so that the
// structural checks behind the CRC are exercised.
func reseal(obj []byte) []byte {
	n := len(obj) - TrailerSize
	binary.BigEndian.PutUint32(obj[n:], crc32.Checksum(obj[:n], castagnoli))
	return obj
}

// wrapPayload builds an uncompressed object around a raw payload with the given counts.
func wrapPayload(payload []byte, appends, records uint32) []byte {
	obj := make([]byte, HeaderSize, HeaderSize+len(payload)+TrailerSize)
	copy(obj, Magic)
	obj[4] = Version
	binary.BigEndian.PutUint32(obj[8:], appends)
	binary.BigEndian.PutUint32(obj[12:], records)
	binary.BigEndian.PutUint32(obj[16:], uint32(len(payload)))
	binary.BigEndian.PutUint32(obj[20:], uint32(len(payload)))
	obj = append(obj, payload...)
	obj = append(obj, 0, 0, 0, 0)
	return reseal(obj)
}

// TestCorruptionReasons builds objects that pass the CRC but break one structural rule each.
func TestCorruptionReasons(t *testing.T) {
	base := encode(t, CompressionNone, []AppendInput{{Records: []Record{{Headers: []Header{{Name: []byte("n"), Value: []byte("v")}}, Body: []byte("body")}}}})
	// Layout of base: header 24 | append header 11 | record: magic, metered(1), count(2),
	// namelen(2) 'n' valuelen(2) 'v', body(4) | crc.
	const rec = HeaderSize + appendHeaderSize
	cases := []struct {
		name string
		edit func(o []byte) []byte
		want string
	}{
		{"magic", func(o []byte) []byte { o[0] = 'X'; return o }, "bad magic"},
		{"version", func(o []byte) []byte { o[4] = 2; return o }, "unsupported format version 2"},
		{"compression", func(o []byte) []byte { o[5] = 7; return o }, "unknown compression type 7"},
		{"reserved", func(o []byte) []byte { o[7] = 1; return o }, "reserved bytes are not zero"},
		{"stored size", func(o []byte) []byte { o[23]++; return o }, "stored size"},
		{"raw size none", func(o []byte) []byte { o[19]++; return o }, "differs from stored size"},
		{"raw size max", func(o []byte) []byte { binary.BigEndian.PutUint32(o[16:], MaxObjectBytes+1); return o }, "exceeds the limit"},
		{"append count", func(o []byte) []byte { o[11] = 3; return o }, "append count 3 cannot fit"},
		{"record count", func(o []byte) []byte { o[15] = 2; return o }, "header says 2 records, appends hold 1"},
		{"append flags", func(o []byte) []byte { o[HeaderSize] = 0x80; return o }, "reserved flag bits"},
		{"append zero records", func(o []byte) []byte { o[HeaderSize+2] = 0; return o }, "record count 0 outside 1..1000"},
		{"append metered", func(o []byte) []byte { binary.BigEndian.PutUint32(o[HeaderSize+3:], MaxAppendBytes+1); return o }, "exceeds 1048576"},
		{"append metered sum", func(o []byte) []byte { o[HeaderSize+6]++; return o }, "records sum to"},
		{"append length", func(o []byte) []byte { o[HeaderSize+10] += 10; return o }, "records length"},
		{"record type", func(o []byte) []byte { o[rec] = 3; return o }, "unknown record type 3"},
		{"record reserved", func(o []byte) []byte { o[rec] |= 0x40; return o }, "bad record magic 0x42"},
		{"varlen", func(o []byte) []byte { o[rec] |= 3 << recVarlenShift; return o }, "metered size length 4 bytes"},
		{"metered small", func(o []byte) []byte { o[rec+1] = 7; return o }, "record metered size 7 outside"},
		{"metered body", func(o []byte) []byte { o[rec+1] += 5; o[HeaderSize+6] += 5; return o }, "record body of 9 bytes exceeds"},
		{"header count", func(o []byte) []byte { o[rec+3] = 9; return o }, "header count 9 cannot fit"},
		{"name length", func(o []byte) []byte { o[rec+5] = 200; return o }, "header 0 name length invalid"},
		{"escape not canonical", func(o []byte) []byte {
			// rewrite the header count 1 as escape + 4-byte 1
			out := append([]byte{}, o[:rec+2]...)
			out = append(out, 0xFF, 0xFF, 0, 0, 0, 1)
			out = append(out, o[rec+4:]...)
			binary.BigEndian.PutUint32(out[16:], binary.BigEndian.Uint32(out[16:])+4)
			binary.BigEndian.PutUint32(out[20:], binary.BigEndian.Uint32(out[20:])+4)
			binary.BigEndian.PutUint32(out[HeaderSize+7:], binary.BigEndian.Uint32(out[HeaderSize+7:])+4)
			return out
		}, "not canonical"},
		{"type vs headers", func(o []byte) []byte { o[rec] = o[rec]&^recTypeMask | recTypeCommand; return o }, "disagrees with its headers"},
		{"trailing bytes", func(o []byte) []byte {
			out := append([]byte{}, o[:len(o)-TrailerSize]...)
			out = append(out, 0, 0, 0, 0, 0)
			binary.BigEndian.PutUint32(out[16:], binary.BigEndian.Uint32(out[16:])+1)
			binary.BigEndian.PutUint32(out[20:], binary.BigEndian.Uint32(out[20:])+1)
			return out
		}, "bytes after the last append"},
	}
	for _, tc := range cases {
		o := reseal(tc.edit(bytes.Clone(base)))
		_, err := decodeChecked(o)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		// Whether Decode or the Iterator finds it, no record of the broken append is returned.
		if b, err := Decode(o); err == nil {
			it := b.Iter(nil)
			if it.Next() || !errors.Is(it.Err(), ErrCorrupt) || it.Err().Error() != b.Validate().Error() {
				t.Errorf("%s: Decode passed; the iterator returned a record or a different error: %v", tc.name, it.Err())
			}
		}
	}
	// Non-canonical metered size (2 bytes for a value under 256).
	seqOK := encode(t, CompressionNone, []AppendInput{{Records: []Record{{Body: []byte("b")}}}})
	o := append([]byte{}, seqOK[:rec]...)
	o = append(o, seqOK[rec]|1<<recVarlenShift, 0)
	o = append(o, seqOK[rec+1:]...)
	binary.BigEndian.PutUint32(o[16:], binary.BigEndian.Uint32(o[16:])+1)
	binary.BigEndian.PutUint32(o[20:], binary.BigEndian.Uint32(o[20:])+1)
	binary.BigEndian.PutUint32(o[HeaderSize+7:], binary.BigEndian.Uint32(o[HeaderSize+7:])+1)
	if _, err := decodeChecked(reseal(o)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "shortest form") {
		t.Errorf("non-canonical metered size: %v", err)
	}
	// A command record with a bad payload behind a valid CRC.
	cmd := wrapPayload(append([]byte{0, 0, 1, 0, 0, 0, 21, 0, 0, 0, 19,
		recTypeCommand, 21, 0, 1, 0, 0, 0, 4, 't', 'r', 'i', 'm'}, make([]byte, 7)...), 1, 1)
	var ce *CorruptError
	if _, err := decodeChecked(cmd); !errors.As(err, &ce) || !strings.Contains(err.Error(), "trim payload must be exactly 8 bytes, found 7") {
		t.Errorf("bad trim payload: %v", err)
	}
}

func TestZstdBounds(t *testing.T) {
	obj := smallObject(t, CompressionZstd)
	// Declared payload size smaller than the frame's content: DecodeAll must stop at it.
	o := bytes.Clone(obj)
	binary.BigEndian.PutUint32(o[16:], binary.BigEndian.Uint32(o[16:])-1)
	if _, err := Decode(reseal(o)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short declared size: %v", err)
	}
	o = bytes.Clone(obj)
	binary.BigEndian.PutUint32(o[16:], binary.BigEndian.Uint32(o[16:])+1)
	if _, err := Decode(reseal(o)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("long declared size: %v", err)
	}
	// A zip bomb: 64 MiB of zeros compress to a few KiB; declared as 1 KiB, it must fail
	// without inflating.
	bomb := zstdEncoder().EncodeAll(make([]byte, 64<<20), nil)
	o = make([]byte, HeaderSize, HeaderSize+len(bomb)+TrailerSize)
	copy(o, Magic)
	o[4], o[5] = Version, byte(CompressionZstd)
	binary.BigEndian.PutUint32(o[16:], 1024)
	binary.BigEndian.PutUint32(o[20:], uint32(len(bomb)))
	o = append(append(o, bomb...), 0, 0, 0, 0)
	if _, err := Decode(reseal(o)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("zip bomb: %v", err)
	}
}

func TestIteratorReportsCorruption(t *testing.T) {
	// An iterator over a batch whose buffer changed after Decode must report, not panic.
	obj := smallObject(t, CompressionNone)
	b, err := Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj[HeaderSize+appendHeaderSize+8+1+len("fence-token")] = 0x07 // first record's magic
	it := b.Iter(nil)
	if it.Next() || !errors.Is(it.Err(), ErrCorrupt) {
		t.Fatalf("Next on a damaged buffer: err %v", it.Err())
	}
	if it.Next() {
		t.Fatal("Next after an error")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte(Magic))
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		f.Add(smallObject(f, c))
		f.Add(encode(f, c, nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodes(t, data)
	})
}

// FuzzDecodePayload wraps fuzzed payloads in a valid header and CRC, so that the fuzzer
// reaches the structural checks behind the CRC.
func FuzzDecodePayload(f *testing.F) {
	for _, c := range []Compression{CompressionNone} {
		obj := smallObject(f, c)
		f.Add(obj[HeaderSize:len(obj)-TrailerSize], uint32(2), uint32(4))
	}
	f.Add([]byte{0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 4, recTypeEnvelope, 8, 0, 0}, uint32(1), uint32(1))
	f.Add([]byte{0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 4, recTypeEnvelope, 8, 0xFF, 0xFF, 0, 0, 0, 0}, uint32(1), uint32(1))
	f.Fuzz(func(t *testing.T, payload []byte, appends, records uint32) {
		checkDecodes(t, wrapPayload(payload, appends, records))
	})
}

// decodeChecked is Decode followed by Validate: every check the format has.
func decodeChecked(data []byte) (*Object, error) {
	b, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// checkDecodes: Decode must not panic; an error must be a *CorruptError; Validate and a full
// iteration must agree; a valid batch must iterate cleanly and, for an uncompressed object,
// re-encode to the same bytes (the encoding is canonical).
func checkDecodes(t *testing.T, data []byte) {
	b, err := Decode(data)
	if err == nil {
		verr := b.Validate()
		it := b.Iter(nil)
		for it.Next() {
		}
		if (verr == nil) != (it.Err() == nil) || (verr != nil && verr.Error() != it.Err().Error()) {
			t.Fatalf("Validate says %v, iteration says %v", verr, it.Err())
		}
		err = verr
	}
	if err != nil {
		var ce *CorruptError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
			t.Fatalf("error of the wrong class: %v", err)
		}
		return
	}
	ins := make([]AppendInput, b.NumAppends())
	for i := range ins {
		m := b.Append(i)
		ins[i].MatchSeqNum, ins[i].FencingToken = m.MatchSeqNum, m.FencingToken
	}
	it := b.Iter(nil)
	n := 0
	for it.Next() {
		r := it.Record()
		if r.MeteredSize() > MaxAppendBytes {
			t.Fatalf("record of %d metered bytes", r.MeteredSize())
		}
		cp := *r
		cp.Headers = append([]Header(nil), r.Headers...)
		ins[it.AppendIndex()].Records = append(ins[it.AppendIndex()].Records, cp)
		n++
	}
	if it.Err() != nil || n != b.NumRecords() {
		t.Fatalf("iteration after a clean Decode: %d of %d records, %v", n, b.NumRecords(), it.Err())
	}
	for i := range ins {
		if err := ins[i].Validate(); err != nil {
			t.Fatalf("decoded append %d is invalid: %v", i, err)
		}
	}
	if b.Compression() == CompressionNone {
		if again := encode(t, CompressionNone, ins); !bytes.Equal(again, data) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, data)
		}
	}
}

// TestConcurrentCodecs runs encoders and decoders in parallel over the shared zstd
// instances; run with -race.
func TestConcurrentCodecs(t *testing.T) {
	seed := testSeed(t)
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func(g int) {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			var d Decoder
			for k := 0; k < 20; k++ {
				ins := []AppendInput{randAppend(r, false), randAppend(r, false)}
				e := NewEncoder(CompressionZstd)
				e.Add(&ins[0])
				e.Add(&ins[1])
				obj, err := e.Finish()
				if err == nil {
					var b *Object
					if b, err = d.Decode(obj); err == nil && b.NumRecords() != len(ins[0].Records)+len(ins[1].Records) {
						err = errors.New("record count differs")
					}
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func FuzzParseCompression(f *testing.F) {
	for _, s := range []string{"none", "zstd", "", "ZSTD", "gzip"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCompression(s)
		if err != nil {
			if !errors.Is(err, ErrUnknownCompression) {
				t.Fatalf("error of the wrong class: %v", err)
			}
			return
		}
		if !c.Valid() || c.String() != s {
			t.Fatalf("ParseCompression(%q) = %v", s, c)
		}
	})
}

// TestEncoderObjectChecksum drives the uncompressed encoder's checksum: bodies of many
// sizes, empty ones and multiples of 64 bytes among them, a Finish in the middle followed
// by more appends, and Reset. Each object's CRC32C is checked against hash/crc32 over its
// bytes, and its records against the input.
func TestEncoderObjectChecksum(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 9))
	e := NewEncoder(CompressionNone)
	for round := 0; round < 60; round++ {
		e.Reset()
		var ins []AppendInput
		for a := 0; a < 1+r.IntN(6); a++ {
			var in AppendInput
			for k := 0; k < 1+r.IntN(25); k++ {
				size := r.IntN(3000)
				switch r.IntN(4) {
				case 0: // long bodies, many blocks each
					size = r.IntN(20 << 10)
				case 1: // at and next to multiples of the 64-byte moves, empty included
					size = max(0, 64*r.IntN(10)+r.IntN(3)-1)
				}
				body := make([]byte, size)
				for i := range body {
					body[i] = byte(r.Uint32())
				}
				rec := Record{Body: body, HasTimestamp: r.IntN(2) == 0, Timestamp: r.Uint64()}
				for h := 0; h < r.IntN(3); h++ {
					rec.Headers = append(rec.Headers, Header{Name: []byte("h" + strconv.Itoa(h)), Value: make([]byte, r.IntN(300))})
				}
				if in.MeteredSize()+rec.MeteredSize() > MaxAppendBytes {
					break
				}
				in.Records = append(in.Records, rec)
			}
			if r.IntN(3) == 0 {
				tok := "token"
				in.FencingToken = &tok
			}
			e.Add(&in)
			ins = append(ins, in)
			if r.IntN(4) == 0 {
				checkObjectCRC(t, e, ins) // Finish in the middle; more appends follow
			}
		}
		checkObjectCRC(t, e, ins)
	}
}

func checkObjectCRC(t *testing.T, e *Encoder, ins []AppendInput) {
	t.Helper()
	obj, err := e.Finish()
	if err != nil {
		t.Fatal(err)
	}
	n := len(obj) - TrailerSize
	if got, want := binary.BigEndian.Uint32(obj[n:]), crc32.Checksum(obj[:n], castagnoli); got != want {
		t.Fatalf("object of %d bytes: CRC32C %08x, hash/crc32 says %08x", len(obj), got, want)
	}
	b, err := decodeChecked(obj)
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, b, ins, nil)
}

// TestEncoderGrow: an encoder grown first encodes the same object, and keeps its buffer.
func TestEncoderGrow(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 4))
	ins := make([]AppendInput, 20)
	for i := range ins {
		ins[i] = randAppend(r, false)
	}
	want := encode(t, CompressionNone, ins)
	e := NewEncoder(CompressionNone)
	e.Grow(len(want))
	c := e.Cap()
	for i := range ins {
		e.Add(&ins[i])
	}
	got, err := e.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("a grown encoder encoded another object")
	}
	if e.Cap() != c {
		t.Fatalf("buffer of %d bytes grew to %d for an object of %d", c, e.Cap(), len(want))
	}
}
