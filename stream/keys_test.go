package stream

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// randomBatch draws a batch name, times of every magnitude included.
func randomBatch(r *rand.Rand) BatchName {
	ms := r.Int64N(1 << 44)
	switch r.IntN(4) {
	case 0:
		ms = r.Int64() // up to 16 hex digits
	case 1:
		ms = []int64{0, 1, 1<<48 - 1, 1 << 48, math.MaxInt64}[r.IntN(5)]
	}
	return BatchName{UnixMilli: ms, Random: r.Uint64()}
}

func randomSegment(r *rand.Rand) SegmentName {
	n := SegmentName{FirstSeq: r.Uint64() >> r.IntN(64), Level: uint8(r.IntN(256)), Random: r.Uint64()}
	for i := range n.Generation {
		n.Generation[i] = byte(r.Uint32())
	}
	return n
}

// TestKeysAreTheFormatsOfOld: BatchKey and SegmentKey make the bytes the producer and the
// manifest wrote before they moved here (format strings kept verbatim), so stores written by
// either read the same.
func TestKeysAreTheFormatsOfOld(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Get(t), 1))
	s, _ := Locate("", "orders")
	for range 2000 {
		b := randomBatch(r)
		var rb [8]byte
		for i := range rb {
			rb[i] = byte(b.Random >> (56 - 8*i))
		}
		if got, want := s.BatchKey(b), fmt.Sprintf("%s/%012x%s", s.DataPrefix(), max(b.UnixMilli, 0), hex.EncodeToString(rb[:])); got != want {
			t.Fatalf("BatchKey(%+v) = %q, the old format gives %q", b, got, want)
		}
		g := randomSegment(r)
		var rs [8]byte
		for i := range rs {
			rs[i] = byte(g.Random >> (56 - 8*i))
		}
		if got, want := s.SegmentKey(g), fmt.Sprintf("%s%x-%020d-%d-%x", s.ManifestKey()+".seg/", g.Generation[:], g.FirstSeq, g.Level, rs); got != want {
			t.Fatalf("SegmentKey(%+v) = %q, the old format gives %q", g, got, want)
		}
	}
	if got := Default().BatchKey(BatchName{UnixMilli: -5, Random: 1}); got != "ingest/0000000000000000000000000001" {
		t.Fatalf("negative time: %q", got)
	}
	if got := Default().ProbeKey(); got != "ingest/gc-probe" {
		t.Fatalf("probe key %q", got)
	}
}

// TestKeysRoundTrip: every key made parses back to what made it, and is classified as its
// kind; a key of another stream is foreign.
func TestKeysRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Get(t), 2))
	streams := []Stream{Default(), MustNew("a/manifest", "a/data"), MustNew("m", "m")}
	if s, err := Locate("my-basin", "x/y"); err == nil {
		streams = append(streams, s)
	}
	other := MustNew("b/manifest", "b/data")
	for range 2000 {
		s := streams[r.IntN(len(streams))]
		b := randomBatch(r)
		key := s.BatchKey(b)
		got, ok := s.ParseBatchKey(key)
		if b.UnixMilli < 0 {
			b.UnixMilli = 0
		}
		if !ok || got != b {
			t.Fatalf("ParseBatchKey(BatchKey(%+v) = %q) = %+v, %v", b, key, got, ok)
		}
		if k := s.Classify(key); k != KeyBatch {
			t.Fatalf("%q classified %v", key, k)
		}
		if k := other.Classify(key); k != KeyForeign {
			t.Fatalf("%q classified %v for another stream", key, k)
		}
		g := randomSegment(r)
		key = s.SegmentKey(g)
		gotg, ok := s.ParseSegmentKey(key)
		if !ok || gotg != g {
			t.Fatalf("ParseSegmentKey(SegmentKey(%+v) = %q) = %+v, %v", g, key, gotg, ok)
		}
		if k := s.Classify(key); k != KeySegment {
			t.Fatalf("%q classified %v", key, k)
		}
		if k := other.Classify(key); k != KeyForeign {
			t.Fatalf("%q classified %v for another stream", key, k)
		}
	}
	for _, s := range streams {
		if k := s.Classify(s.ManifestKey()); k != KeyManifest {
			t.Fatalf("manifest %q classified %v", s.ManifestKey(), k)
		}
		if k := s.Classify(s.ProbeKey()); k != KeyProbe {
			t.Fatalf("probe %q classified %v", s.ProbeKey(), k)
		}
	}
}

// TestKeysRefuseNearMisses: keys one step off what the makers make are not taken for
// batch or segment objects (the collector would delete them).
func TestKeysRefuseNearMisses(t *testing.T) {
	s := Default()
	good := s.BatchKey(BatchName{UnixMilli: 0x0123456789ab, Random: 0x0123456789abcdef})
	if good != "ingest/0123456789ab0123456789abcdef" {
		t.Fatalf("batch key %q", good)
	}
	name := strings.TrimPrefix(good, "ingest/")
	for _, k := range []string{
		"ingest/" + name[1:],                      // 27 digits
		"ingest/" + strings.ToUpper(name),         // upper case
		"ingest/" + name[:27] + "g",               // not hex
		"ingest/0" + name,                         // padded beyond 12 digits
		"ingest/" + "8" + strings.Repeat("0", 31), // time beyond int64
		"ingest/" + name + "0000",                 // 33 digits
		"ingest//" + name,                         // empty path segment
		"ingest/x/" + name,                        // deeper
		"ingestx/" + name,                         // other prefix
		"ingest/" + name + "/",                    // trailing slash
		"ingest/" + name + ".tmp",                 // suffix
		"ingest/-" + name,                         // sign
	} {
		if _, ok := s.ParseBatchKey(k); ok {
			t.Errorf("batch near-miss %q accepted", k)
		}
	}
	seg := s.SegmentKey(SegmentName{Generation: [4]byte{1, 2, 3, 4}, FirstSeq: 42, Level: 2, Random: 7})
	if seg != "ingest/manifest.seg/01020304-00000000000000000042-2-0000000000000007" {
		t.Fatalf("segment key %q", seg)
	}
	p := "ingest/manifest.seg/"
	for _, k := range []string{
		p + "0102030-00000000000000000042-2-0000000000000007",    // 7 hex generation
		p + "01020304-0000000000000000042-2-0000000000000007",    // 19 digits
		p + "01020304-00000000000000000042-02-0000000000000007",  // level padded
		p + "01020304-00000000000000000042-256-0000000000000007", // level beyond uint8
		p + "01020304-00000000000000000042--0000000000000007",    // no level
		p + "01020304-99999999999999999999-2-0000000000000007",   // seq beyond uint64
		p + "01020304-00000000000000000042-2-000000000000007",    // 15 hex random
		p + "0102030G-00000000000000000042-2-0000000000000007",   // upper-case / not hex
		p + "01020304-00000000000000000042-2-0000000000000007-",  // extra part
		p + "01020304-0000000000000000004a-2-0000000000000007",   // hex seq
		"ingest/manifestx.seg/01020304-00000000000000000042-2-0000000000000007",
		"ingest/manifest.seg/x/01020304-00000000000000000042-2-0000000000000007",
	} {
		if _, ok := s.ParseSegmentKey(k); ok {
			t.Errorf("segment near-miss %q accepted", k)
		}
		if kind := s.Classify(k); kind != KeyForeign {
			t.Errorf("segment near-miss %q classified %v", k, kind)
		}
	}
}

// FuzzParseKeys: whatever a parser accepts, the maker makes again byte for byte, so no two
// keys parse the same and nothing outside the format is taken for the stream's.
func FuzzParseKeys(f *testing.F) {
	s := Default()
	f.Add(s.BatchKey(BatchName{UnixMilli: 1, Random: 2}))
	f.Add(s.SegmentKey(SegmentName{FirstSeq: 3, Level: 1, Random: 4}))
	f.Add("ingest/0" + strings.Repeat("f", 31))
	f.Add("ingest/manifest.seg/01020304-00000000000000000042-02-0000000000000007")
	f.Fuzz(func(t *testing.T, key string) {
		if b, ok := s.ParseBatchKey(key); ok && s.BatchKey(b) != key {
			t.Fatalf("ParseBatchKey accepted %q, which BatchKey makes as %q", key, s.BatchKey(b))
		}
		if g, ok := s.ParseSegmentKey(key); ok && s.SegmentKey(g) != key {
			t.Fatalf("ParseSegmentKey accepted %q, which SegmentKey makes as %q", key, s.SegmentKey(g))
		}
	})
}
