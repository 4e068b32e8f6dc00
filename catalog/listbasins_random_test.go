package catalog

import (
	"context"
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
	ctx := context.Background()
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
			for _, after := range cursors {
				var rest []string
				for _, n := range names {
					if strings.HasPrefix(n, prefix) && n > after {
						rest = append(rest, n)
					}
				}
				for limit := 1; limit <= len(names)+1; limit++ {
					got, more, err := ListBasins(ctx, s, prefix, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					exp := rest[:min(limit, len(rest))]
					if !slices.Equal(got, exp) || more != (len(rest) > limit) {
						t.Fatalf("names %q prefix %q after %q limit %d: got %q more %v, want %q more %v", names, prefix, after, limit, got, more, exp, len(rest) > limit)
					}
				}
			}
			for limit := 1; limit <= 3; limit++ {
				var paged []string
				after := ""
				for i := 0; ; i++ {
					if i > len(names)+2 {
						t.Fatalf("no end")
					}
					page, more, err := ListBasins(ctx, s, prefix, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					paged = append(paged, page...)
					if !more || len(page) == 0 {
						break
					}
					after = page[len(page)-1]
				}
				var want []string
				for _, n := range names {
					if strings.HasPrefix(n, prefix) {
						want = append(want, n)
					}
				}
				if !slices.Equal(paged, want) {
					t.Fatalf("names %q prefix %q limit %d: paged %q want %q", names, prefix, limit, paged, want)
				}
			}
		}
	}
}
