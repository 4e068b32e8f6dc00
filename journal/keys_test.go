package journal

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
)

func TestKeyRoundTripsAndSortsByNumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	id := ID(rng.Uint64())
	nums := []uint64{0, 1, 9, 10, 99, 100, math.MaxUint64}
	for range 200 {
		nums = append(nums, rng.Uint64()>>uint(rng.IntN(64)))
	}
	keys := make([]string, len(nums))
	for i, n := range nums {
		k := Key(id, n)
		if err := objectstore.ValidateKey(k); err != nil {
			t.Fatalf("Key(%s, %d) = %q: %v", id, n, k, err)
		}
		gotID, gotN, ok := ParseKey(k)
		if !ok || gotID != id || gotN != n {
			t.Fatalf("ParseKey(%q) = %s, %d, %v; want %s, %d", k, gotID, gotN, ok, id, n)
		}
		keys[i] = k
	}
	sort.Strings(keys)
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	for i, k := range keys {
		if _, n, _ := ParseKey(k); n != nums[i] {
			t.Fatalf("byte order of keys is not number order at %d: %q", i, k)
		}
	}
}

func TestParseKeyRefusesNearMisses(t *testing.T) {
	good := Key(0xabc, 42)
	if _, _, ok := ParseKey(good); !ok {
		t.Fatalf("ParseKey(%q) refused a key Key made", good)
	}
	for _, k := range []string{
		"",
		"journals/",
		"journals/0000000000000abc/42", // short number
		"journals/0000000000000ABC/00000000000000000042",     // upper-case hex
		"journals/abc/00000000000000000042",                  // short id
		"journals/0000000000000abc/0000000000000000004x",     // not a digit
		"journals/0000000000000abc/00000000000000000042/x",   // extra segment
		"journal/0000000000000abc/00000000000000000042",      // wrong root
		"x/journals/0000000000000abc/00000000000000000042",   // under another prefix
		"journals/0000000000000abc/99999999999999999999",     // over 2^64-1
		"journals/0000000000000abc-00000000000000000042",     // no slash
		"journals/000000000000abcg/00000000000000000042",     // not hex
		"journals/0000000000000abc/+0000000000000000042",     // sign
		"journals/0000000000000abc/000000000000000000042",    // 21 digits
		"journals/0000000000000abc//0000000000000000042",     // empty segment
		"journals/0000000000000abc/00000000000000000042.tmp", // suffix
	} {
		if id, n, ok := ParseKey(k); ok {
			t.Errorf("ParseKey(%q) = %s, %d, true; want a refusal", k, id, n)
		}
	}
}
