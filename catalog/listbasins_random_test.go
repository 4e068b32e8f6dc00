package catalog

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// TestListBasinsRandom checks ListBasins against the sorted names over random sets of adversarial
// names (prefixes of each other, '-' and '0' after a prefix), random prefixes, cursors
// (including cursors that are prefixes of names and cursors that are not names) and limits,
// and paging as the SDK's listAll does.
func TestListBasinsRandom(t *testing.T) {
	const seed = 1
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	alpha := "a-0b"
	randName := func() string {
		n := 1 + rng.Intn(6)
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteByte(alpha[rng.Intn(len(alpha))])
		}
		return "x" + b.String()
	}
	for round := 0; round < 300; round++ {
		s := objectstore.NewMemStore()
		set := map[string]bool{}
		for i := 0; i < 1+rng.Intn(12); i++ {
			n := randName()
			set[n] = true
			mustPut(t, s, BasinMarker(n))
			if rng.Intn(2) == 0 {
				mustPut(t, s, "basins/"+n+"/streams/s/manifest")
			}
		}
		// streams of a basin without a marker
		nm := randName()
		if !set[nm] {
			mustPut(t, s, "basins/"+nm+"/streams/s/manifest")
		}
		var names []string
		for n := range set {
			names = append(names, n)
		}
		slices.Sort(names)
		var prefixes, cursors []string
		prefixes = append(prefixes, "", "x")
		cursors = append(cursors, "", "x", "x-", "xa-", "xzzz")
		for _, n := range names {
			prefixes = append(prefixes, n[:1+rng.Intn(len(n))])
			cursors = append(cursors, n, n[:1+rng.Intn(len(n))], n+"-")
		}
		for _, prefix := range prefixes {
			checkListBasins(t, s, names, prefix, cursors)
		}
	}
}
