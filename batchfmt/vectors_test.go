package batchfmt

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.hex from the current encoder")

type vector struct {
	name string
	c    Compression
	ins  func() []AppendInput
	note string
}

func u64(v uint64) *uint64 { return &v }
func str(s string) *string { return &s }

var vectors = []vector{
	{"empty", CompressionNone, func() []AppendInput { return nil }, "an object with no appends"},
	{"basic", CompressionNone, func() []AppendInput {
		return []AppendInput{{Records: []Record{{Body: []byte("hello")}}}}
	}, "one append, one envelope record without headers or timestamp"},
	{"full", CompressionNone, fullVector, "conditions, timestamps, headers, empty body, fence and trim commands"},
	{"escape", CompressionNone, func() []AppendInput {
		return []AppendInput{{Records: []Record{{Headers: []Header{
			{Name: []byte("below"), Value: bytes.Repeat([]byte{'a'}, 0xFFFE)},
			{Name: []byte("at"), Value: bytes.Repeat([]byte{'b'}, 0xFFFF)},
		}, Body: []byte("!")}}}}
	}, "header values of 65534 (2-byte length) and 65535 bytes (0xFFFF escape + 4-byte length)"},
	{"full-zstd", CompressionZstd, fullVector, "the full vector, zstd-compressed (decoding pinned; encoding compared after decompression)"},
}

func fullVector() []AppendInput {
	return []AppendInput{
		{Records: []Record{
			{Timestamp: 1709481600000, HasTimestamp: true, Headers: []Header{{Name: []byte("event-type"), Value: []byte("user.created")}, {Name: []byte("trace-id"), Value: []byte("abc123")}}, Body: []byte(`{"user_id":123}`)},
			{Timestamp: 0, HasTimestamp: true},
			FenceRecord("my-unique-token"),
		}, MatchSeqNum: u64(100), FencingToken: str("")},
		{Records: []Record{TrimRecord(100), {Body: bytes.Repeat([]byte("0123456789"), 30)}}, FencingToken: str("my-unique-token")},
		{Records: []Record{{Headers: []Header{{Name: []byte{0}, Value: nil}}}}, MatchSeqNum: u64(1<<64 - 1)},
	}
}

func formatHex(name, note string, b []byte) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# batchfmt test vector %q, format version %d: %s\n", name, Version, note)
	fmt.Fprintf(&sb, "# %d bytes; regenerate with: go test ./batchfmt -run TestVectors -update\n", len(b))
	fmt.Fprintf(&sb, "# a line \"xx*N\" stands for N bytes of value xx\n")
	line := 0
	for i := 0; i < len(b); {
		run := 1
		for i+run < len(b) && b[i+run] == b[i] {
			run++
		}
		if run >= 64 {
			if line > 0 {
				sb.WriteString("\n")
				line = 0
			}
			fmt.Fprintf(&sb, "%02x*%d\n", b[i], run)
			i += run
			continue
		}
		fmt.Fprintf(&sb, "%02x", b[i])
		i++
		if line++; line == 32 {
			sb.WriteString("\n")
			line = 0
		}
	}
	if line > 0 {
		sb.WriteString("\n")
	}
	return []byte(sb.String())
}

func parseHex(t *testing.T, text []byte) []byte {
	var sb strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimSpace(line)
		if v, n, ok := strings.Cut(line, "*"); ok {
			count, err := strconv.Atoi(n)
			if err != nil || len(v) != 2 {
				t.Fatalf("bad run %q", line)
			}
			line = strings.Repeat(v, count)
		}
		sb.WriteString(line)
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVectors pins the format: encoding the known inputs must give the bytes in testdata
// (for zstd, the same header and decompressed payload), and the stored bytes must decode
// to the inputs.
func TestVectors(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			ins := v.ins()
			got := encode(t, v.c, ins)
			path := filepath.Join("testdata", v.name+".hex")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, formatHex(v.name, v.note, got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			want := parseHex(t, text)
			if v.c == CompressionNone {
				if !bytes.Equal(got, want) {
					t.Fatalf("encoding changed: the format is pinned by %s\n got %x\nwant %x", path, head(got), head(want))
				}
			} else {
				// zstd output may change with the library; the header (sizes aside), the
				// counts and the decompressed payload may not.
				if !bytes.Equal(got[:16], want[:16]) {
					t.Fatalf("header changed: got %x want %x", got[:16], want[:16])
				}
				gb, err := Decode(got)
				if err != nil {
					t.Fatal(err)
				}
				wb, err := Decode(want)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gb.payload, wb.payload) {
					t.Fatal("decompressed payload changed")
				}
			}
			b, err := Decode(want)
			if err != nil {
				t.Fatalf("stored vector no longer decodes: %v", err)
			}
			checkBatch(t, b, ins, nil)
		})
	}
}

func head(b []byte) []byte { return b[:min(len(b), 96)] }
