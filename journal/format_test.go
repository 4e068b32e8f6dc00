package journal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
)

func randomWindow(rng *rand.Rand, n uint64) (Header, []Section) {
	h := Header{Kind: KindWindow, Journal: ID(rng.Uint64()), Number: n, WrittenAtMs: rng.Uint64N(1 << 45)}
	for i := range h.Nonce {
		h.Nonce[i] = byte(rng.Uint32())
	}
	secs := make([]Section, rng.IntN(6))
	for i := range secs {
		s := &secs[i]
		s.Manifest = fmt.Sprintf("streams/s%d/manifest", i)
		for j := range s.Generation {
			s.Generation[j] = byte(rng.Uint32())
		}
		s.FirstSeq = rng.Uint64N(1 << 40)
		s.NextSeq = s.FirstSeq + rng.Uint64N(1000)
		s.Data = make([]byte, rng.IntN(300))
		for j := range s.Data {
			s.Data[j] = byte(rng.Uint32())
		}
	}
	return h, secs
}

// decodeAll decodes a whole object and returns its sections' bytes.
func decodeAll(key string, obj []byte) (Header, []IndexRow, [][]byte, error) {
	h, rows, err := DecodeIndex(key, obj, int64(len(obj)))
	if err != nil {
		return h, nil, nil, err
	}
	var data [][]byte
	for _, r := range rows {
		d, err := r.Section(key, obj[r.Offset:r.Offset+r.Length])
		if err != nil {
			return h, rows, nil, err
		}
		data = append(data, d)
	}
	return h, rows, data, nil
}

func TestWindowRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 1))
	for n := range uint64(300) {
		h, secs := randomWindow(rng, n)
		obj, err := Encode(h, secs)
		if err != nil {
			t.Fatal(err)
		}
		got, rows, data, err := decodeAll("k", obj)
		if err != nil {
			t.Fatalf("window %d: %v", n, err)
		}
		h.IndexLen = got.IndexLen
		if got != h {
			t.Fatalf("header %+v, want %+v", got, h)
		}
		if len(rows) != len(secs) {
			t.Fatalf("%d rows, want %d", len(rows), len(secs))
		}
		for i, r := range rows {
			s := secs[i]
			if r.Manifest != s.Manifest || r.Generation != s.Generation || r.FirstSeq != s.FirstSeq || r.NextSeq != s.NextSeq || !bytes.Equal(data[i], s.Data) {
				t.Fatalf("section %d: %+v, want %+v", i, r, s)
			}
		}
	}
}

func TestFenceRoundTripsWithoutIndex(t *testing.T) {
	h := Header{Kind: KindFence, Journal: 7, Number: 3, Nonce: [16]byte{1, 2, 3}, WrittenAtMs: 99}
	obj, err := Encode(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(obj) != HeadSize {
		t.Fatalf("fence is %d bytes, want %d", len(obj), HeadSize)
	}
	got, rows, err := DecodeIndex("k", obj, int64(len(obj)))
	if err != nil || got != h || rows != nil {
		t.Fatalf("DecodeIndex = %+v, %v, %v; want %+v", got, rows, err, h)
	}
	if _, err := Encode(h, []Section{{Manifest: "m"}}); err == nil {
		t.Fatal("Encode took a fence with a section")
	}
}

func TestEncodeRefusesMalformedWindows(t *testing.T) {
	for name, secs := range map[string][]Section{
		"backwards":    {{Manifest: "m", FirstSeq: 5, NextSeq: 4}},
		"stream twice": {{Manifest: "m"}, {Manifest: "m"}},
	} {
		if _, err := Encode(Header{Kind: KindWindow}, secs); err == nil {
			t.Errorf("%s: Encode took it", name)
		}
	}
	if _, err := Encode(Header{Kind: 9}, nil); err == nil {
		t.Error("Encode took an unknown kind")
	}
}

// Every single-bit flip of a window is caught: in the header or index by the header's CRC
// (or a structural check), in a section by the section's CRC.
func TestEveryBitFlipIsCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 2))
	h, secs := randomWindow(rng, 1)
	secs = append(secs, Section{Manifest: "last", Data: []byte("some bytes")})
	obj, err := Encode(h, secs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range obj {
		for bit := range 8 {
			bad := bytes.Clone(obj)
			bad[i] ^= 1 << bit
			_, _, _, err := decodeAll("k", bad)
			if err == nil {
				t.Fatalf("flip of byte %d bit %d went unnoticed", i, bit)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("flip of byte %d bit %d: %v is not ErrCorrupt", i, bit, err)
			}
		}
	}
	for n := range len(obj) {
		if _, _, _, err := decodeAll("k", obj[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("object cut to %d of %d bytes: %v, want ErrCorrupt", n, len(obj), err)
		}
	}
}

func TestNewerVersionIsUnsupportedNotCorrupt(t *testing.T) {
	obj, err := Encode(Header{Kind: KindFence}, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj[4] = FormatVersion + 1
	if _, err := DecodeHeader("k", obj); !errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecodeHeader = %v, want ErrUnsupportedVersion only", err)
	}
}

// TestSectionPartsEncodeAsOne: a section given as Data and More is the same object, byte
// for byte, as one whose Data holds them all.
func TestSectionPartsEncodeAsOne(t *testing.T) {
	h := Header{Kind: KindWindow, Journal: 9, Number: 4, Nonce: [16]byte{1}}
	parts := Section{Manifest: "a/manifest", FirstSeq: 3, NextSeq: 5, Data: []byte("delta"), More: [][]byte{[]byte("rec-1"), nil, []byte("rec-22")}}
	whole := parts
	whole.Data, whole.More = []byte("deltarec-1rec-22"), nil
	other := Section{Manifest: "b/manifest", NextSeq: 1, Data: []byte("x")}
	a, err := Encode(h, []Section{parts, other})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(h, []Section{whole, other})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("a section in parts encodes differently from the same bytes in one piece")
	}
	_, rows, err := DecodeIndex("k", a, int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	data, err := rows[0].Section("k", a[rows[0].Offset:rows[0].Offset+rows[0].Length])
	if err != nil || string(data) != "deltarec-1rec-22" {
		t.Fatalf("section read back %q, %v", data, err)
	}
}
