package stream

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
)

func TestEncodeNameInjectiveAndSafe(t *testing.T) {
	seed := testseed.Get(t)
	r := rand.New(rand.NewPCG(seed, 0))
	seen := map[string]string{}
	names := []string{"a", "a/data", "a%2Fdata", "..", ".", "a/../b", "%", "%25", "orders/2024/03", "log.application.production", "MyStream", "mystream", "ünï côdé", "\x00"}
	for i := 0; i < 2000; i++ {
		b := make([]byte, 1+r.IntN(12))
		for j := range b {
			const alphabet = "ab/.%-_A\x00\xff"
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	for i := 0; i < 300; i++ {
		b := make([]byte, 1+r.IntN(MaxStreamNameLen))
		for j := range b {
			const alphabet = "ab/.%-_A\x00\xff"
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	dirs := map[string]string{}
	for _, n := range names {
		dir := streamDir(n)
		for _, seg := range strings.Split(dir, "/") {
			if seg == "" || len(seg) > MaxSegmentLen {
				t.Fatalf("streamDir(%q) = %q: segment %q empty or longer than %d", n, dir, seg, MaxSegmentLen)
			}
		}
		if got, err := DecodeDir(dir); err != nil || got != n {
			t.Fatalf("DecodeDir(streamDir(%q)) = %q, %v", n, got, err)
		}
		if prev, ok := dirs[dir]; ok && prev != n {
			t.Fatalf("streamDir collides: %q and %q", prev, n)
		}
		dirs[dir] = n
	}
	// No stream's directory is a prefix of another's (as paths).
	all := make([]string, 0, len(dirs))
	for d := range dirs {
		all = append(all, d+"/")
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if strings.HasPrefix(all[i], all[i-1]) {
			t.Fatalf("directory %q is a prefix of %q", all[i-1], all[i])
		}
	}
	for _, n := range names {
		enc := EncodeName(n)
		if enc == "" || strings.ContainsAny(enc, "/.") {
			t.Fatalf("EncodeName(%q) = %q: empty or holds '/' or '.'", n, enc)
		}
		if prev, ok := seen[enc]; ok && prev != n {
			t.Fatalf("EncodeName collides: %q and %q both give %q", prev, n, enc)
		}
		seen[enc] = n
		dec, err := DecodeName(enc)
		if err != nil || dec != n {
			t.Fatalf("DecodeName(EncodeName(%q)) = %q, %v", n, dec, err)
		}
		if err := objectstore.ValidateKey("streams/" + enc + "/manifest"); err != nil {
			t.Fatalf("key for %q is not a valid key: %v", n, err)
		}
	}
}

func TestDecodeNameRejectsNonCanonical(t *testing.T) {
	for _, enc := range []string{"", "%", "%4", "%41", "%zz", "a.b", "a/b", "%2f"} {
		if _, err := DecodeName(enc); !errors.Is(err, ErrInvalidName) {
			t.Errorf("DecodeName(%q) = %v, want ErrInvalidName", enc, err)
		}
	}
}

func TestNameValidation(t *testing.T) {
	if err := ValidateStreamName(""); !errors.Is(err, ErrInvalidName) {
		t.Errorf("empty stream name: %v", err)
	}
	if err := ValidateStreamName(strings.Repeat("x", 513)); !errors.Is(err, ErrInvalidName) {
		t.Errorf("513-byte stream name: %v", err)
	}
	if err := ValidateStreamName(strings.Repeat("x", 512)); err != nil {
		t.Errorf("512-byte stream name: %v", err)
	}
	for _, b := range []string{"short", "-leading-dash", "trailing-dash-", "UpperCase1", "has_underscore", strings.Repeat("a", 49)} {
		if err := ValidateBasinName(b); !errors.Is(err, ErrInvalidName) {
			t.Errorf("basin %q accepted: %v", b, err)
		}
	}
	for _, b := range []string{"my-basin", "basin123", strings.Repeat("a", 48)} {
		if err := ValidateBasinName(b); err != nil {
			t.Errorf("basin %q refused: %v", b, err)
		}
	}
	if _, err := Locate("bad", ""); err == nil || !strings.Contains(err.Error(), "basin") || !strings.Contains(err.Error(), "stream") {
		t.Errorf("Locate should report both problems, got %v", err)
	}
}

func FuzzDecodeName(f *testing.F) {
	for _, s := range []string{"a", "%2F", "a%2Fdata", "%", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, enc string) {
		name, err := DecodeName(enc)
		if err != nil {
			return
		}
		if EncodeName(name) != enc {
			t.Fatalf("DecodeName accepted non-canonical %q (-> %q)", enc, name)
		}
	})
}
