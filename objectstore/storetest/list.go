package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
)

// listKeys lists everything under prefix with page size limit, checking the paging contract.
func listKeys(t *testing.T, st objectstore.Store, prefix, startAfter string, limit int) ([]objectstore.ObjectInfo, int) {
	t.Helper()
	var out []objectstore.ObjectInfo
	pages := 0
	after := startAfter
	for {
		page, err := st.List(ctxFor(t), prefix, after, limit)
		if err != nil {
			t.Fatalf("list %q after %q: %v", prefix, after, err)
		}
		pages++
		max := limit
		if max <= 0 || max > 1000 {
			max = 1000
		}
		if len(page.Objects) > max {
			t.Fatalf("list %q limit %d returned %d objects", prefix, limit, len(page.Objects))
		}
		if page.NextStartAfter != "" && len(page.Objects) == 0 {
			t.Fatalf("list %q: empty page with NextStartAfter %q", prefix, page.NextStartAfter)
		}
		if page.NextStartAfter != "" && page.NextStartAfter != page.Objects[len(page.Objects)-1].Key {
			t.Fatalf("list %q: NextStartAfter %q is not the page's last key %q", prefix, page.NextStartAfter, page.Objects[len(page.Objects)-1].Key)
		}
		out = append(out, page.Objects...)
		if page.NextStartAfter == "" {
			return out, pages
		}
		after = page.NextStartAfter
		if pages > 100_000 {
			t.Fatalf("list %q: no end after %d pages", prefix, pages)
		}
	}
}

func keysOf(objs []objectstore.ObjectInfo) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// expected returns the sorted keys of all that start with prefix and sort after startAfter.
func expected(all []string, prefix, startAfter string) []string {
	var out []string
	for _, k := range all {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// trickyKeys sort differently by full key than by a directory walk.
var trickyKeys = []string{
	"a", "a-b", "a.b", "a/b", "a/b/c", "a/b-c", "a/b0", "a0", "a/", "ab", "a b", "a/ b",
	"b/ä", "b/z", "b/é/x", "b/\u00ff", "b/\u4e16\u754c", "b/~", "b/!", "c/x/y/z/1", "c/x/y/z/2", "c/x-",
}

func (s *suite) listOrder(t *testing.T, st objectstore.Store) {
	var keys []string
	for _, k := range trickyKeys {
		if objectstore.ValidateKey(k) == nil {
			keys = append(keys, k)
		}
	}
	// "a" as an object and "a/b" as an object cannot both exist on some backends (a file and a
	// directory of the same name); the suite puts the conflicting pairs under separate roots.
	var all []string
	infos := map[string]objectstore.ObjectInfo{}
	for i, k := range keys {
		for _, root := range rootsFor(k) {
			full := root + k
			infos[full] = mustPut(t, st, full, []byte(fmt.Sprintf("%d %s", i, full)), objectstore.Unconditional())
			all = append(all, full)
		}
	}
	slices.Sort(all)
	for _, limit := range []int{0, 1, 2, 3, 5, 1000, 5000} {
		got, _ := listKeys(t, st, "", "", limit)
		if !slices.Equal(keysOf(got), all) {
			t.Fatalf("list all (limit %d):\n got %q\nwant %q", limit, keysOf(got), all)
		}
		for _, o := range got {
			checkInfo(t, "listed "+o.Key, o, infos[o.Key])
		}
	}
	r := s.rng(t)
	probes := []string{"", "l0/", "l0/a", "l0/a/", "l1/a/b", "l0/a-", "l1/", "l0/b/", "l0/c/x/y/", "zzz", "m/b/\u4e16", "l2/a/b/c", "l1/a/b"}
	for i := 0; i < 30; i++ {
		k := all[r.IntN(len(all))]
		probes = append(probes, k[:r.IntN(len(k)+1)])
	}
	for _, prefix := range probes {
		for _, after := range []string{"", "l1/a", "l0/a", "l1/a/b", "l0/a.", "l1/a/b/", "m/b/é", "l2", probes[r.IntN(len(probes))], all[r.IntN(len(all))]} {
			limit := r.IntN(4)
			got, _ := listKeys(t, st, prefix, after, limit)
			if want := expected(all, prefix, after); !slices.Equal(keysOf(got), want) {
				t.Fatalf("list prefix %q after %q limit %d:\n got %q\nwant %q", prefix, after, limit, keysOf(got), want)
			}
		}
	}
}

// rootsFor spreads keys so that no key is a path prefix of another key under the same root
// (some backends cannot hold both "a" and "a/b"): a key goes under "lN/", N being the number of
// other keys that are its path prefixes. Keys unrelated to any other also go under "m/".
func rootsFor(k string) []string {
	level, related := 0, false
	for _, other := range trickyKeys {
		if other != k && strings.HasPrefix(k, other+"/") {
			level++
			related = true
		}
		if other != k && strings.HasPrefix(other, k+"/") {
			related = true
		}
	}
	roots := []string{fmt.Sprintf("l%d/", level)}
	if !related {
		roots = append(roots, "m/")
	}
	return roots
}

func (s *suite) listPaging(t *testing.T, st objectstore.Store) {
	const n = 1234
	var all []string
	var mu sync.Mutex
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var firstErr error
	for i := 0; i < n; i++ {
		// Mixed widths and a nested level make byte order differ from numeric order.
		key := fmt.Sprintf("p/%d", i)
		if i%10 == 0 {
			key = fmt.Sprintf("p/%d/x", i)
		}
		all = append(all, key)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := objectstore.PutBytes(ctxFor(t), st, key, []byte(key), objectstore.IfAbsent()); err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("writing %d keys: %v", n, firstErr)
	}
	mustPut(t, st, "q/outside", []byte("x"), objectstore.Unconditional())
	slices.Sort(all)
	got, pages := listKeys(t, st, "p/", "", 0)
	if !slices.Equal(keysOf(got), all) {
		t.Fatalf("paged listing of %d keys returned %d keys, or out of order", n, len(got))
	}
	if pages < 2 {
		t.Fatalf("listing %d keys took %d page(s); the default page holds at most 1000", n, pages)
	}
	got, _ = listKeys(t, st, "p/", "", 333)
	if !slices.Equal(keysOf(got), all) {
		t.Fatalf("listing with limit 333 returned %d keys, or out of order", len(got))
	}
	got, _ = listKeys(t, st, "p/", all[700], 1000)
	if want := all[701:]; !slices.Equal(keysOf(got), want) {
		t.Fatalf("listing after %q returned %d keys, want %d", all[700], len(got), len(want))
	}
	got, _ = listKeys(t, st, "", "", 0)
	if len(got) != n+1 || got[len(got)-1].Key != "q/outside" {
		t.Fatalf("listing everything returned %d keys, want %d ending in q/outside", len(got), n+1)
	}
}
