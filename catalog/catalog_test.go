package catalog

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// TestListStreamsSkipsDataAndPages: streams are listed (and paged by start_after) in the
// lexicographic order of their names, which is not the order of their escaped store keys.
func TestListStreamsSkipsDataAndPages(t *testing.T) {
	ctx := context.Background()
	s := objectstore.NewMemStore()
	long := strings.Repeat("x", 300)
	names := []string{"a", "a/data", "a.b", "a-1", "ab", "A", "a_", "b", "device-001", "device-002", "device-003", "z", long, long + "y", strings.Repeat("é/", 128), long[:199] + "%"}
	for _, basin := range []string{"", "my-basin"} {
		for _, n := range names {
			st, err := stream.Locate(basin, n)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				mustPut(t, s, st.DataPrefix()+"/obj"+string(rune('0'+i)))
				mustPut(t, s, st.ManifestKey()+".seg/seg"+string(rune('0'+i)))
			}
			mustPut(t, s, st.ManifestKey())
		}
	}
	// A deleted stream's tombstone (an empty manifest) is not listed.
	gone, _ := stream.Locate("", "gone")
	if _, err := objectstore.PutBytes(ctx, s, gone.ManifestKey(), nil, objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, BasinMarker("my-basin"))
	mustPut(t, s, BasinMarker("other-basin"))
	for _, basin := range []string{"", "my-basin"} {
		got, more, err := ListStreams(ctx, s, basin, "", "", 0)
		if err != nil || more {
			t.Fatalf("list: %v more=%v", err, more)
		}
		var gotNames []string
		for _, st := range got {
			gotNames = append(gotNames, st.Name())
		}
		want := slices.Clone(names) // in the order S2 lists: lexicographic by name
		slices.Sort(want)
		if !slices.Equal(gotNames, want) {
			t.Fatalf("basin %q: got %q want %q", basin, gotNames, want)
		}
		pref, _, err := ListStreams(ctx, s, basin, "device-", "", 0)
		if err != nil || len(pref) != 3 {
			t.Fatalf("prefix list: %v %v", pref, err)
		}
		// Paging: two at a time until done, in order, no repeats, all seen.
		var paged []string
		after := ""
		for {
			page, more, err := ListStreams(ctx, s, basin, "", after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range page {
				paged = append(paged, st.Name())
			}
			if !more {
				break
			}
			after = page[len(page)-1].Name()
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("paged: got %q want %q", paged, want)
		}
	}
	all, err := AllStreams(ctx, s)
	if err != nil || len(all) != 2*len(names) {
		t.Fatalf("AllStreams: %d streams, %v; want %d", len(all), err, 2*len(names))
	}
	for i, st := range all {
		if (i < len(names)) != (st.Basin() == "") {
			t.Fatalf("AllStreams: root streams must come first: %+v", all)
		}
	}
	basins, _, err := ListBasins(ctx, s, "", "", 0)
	if err != nil || !slices.Equal(basins, []string{"my-basin", "other-basin"}) {
		t.Fatalf("basins %q %v", basins, err)
	}
	basins, more, err := ListBasins(ctx, s, "", "", 1)
	if err != nil || !more || !slices.Equal(basins, []string{"my-basin"}) {
		t.Fatalf("basins page %q %v %v", basins, more, err)
	}
}

func mustPut(t *testing.T, s objectstore.Store, key string) {
	t.Helper()
	if _, err := objectstore.PutBytes(context.Background(), s, key, []byte("x"), objectstore.Unconditional()); err != nil {
		t.Fatal(err)
	}
}

// listCounter counts List calls.
type listCounter struct {
	objectstore.Store
	lists int
}

func (c *listCounter) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	c.lists++
	return c.Store.List(ctx, prefix, startAfter, limit)
}

// TestListStreamsRequests: streams with few objects are listed a page at a time, and a
// stream with a long run of data objects costs about one request more, not one per object.
func TestListStreamsRequests(t *testing.T) {
	ctx := context.Background()
	s := &listCounter{Store: objectstore.NewMemStore()}
	const n = 300
	for i := range n {
		st, err := stream.Locate("", fmt.Sprintf("s%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		mustPut(t, s, st.DataPrefix()+"/obj")
		mustPut(t, s, st.ManifestKey())
	}
	busy, _ := stream.Locate("", "s150x")
	for i := range 2500 {
		mustPut(t, s, fmt.Sprintf("%s/obj%05d", busy.DataPrefix(), i))
	}
	mustPut(t, s, busy.ManifestKey())
	got, more, err := ListStreams(ctx, s, "", "", "", 0)
	if err != nil || more || len(got) != n+1 {
		t.Fatalf("listed %d streams (more %v): %v", len(got), more, err)
	}
	if limit := 2*n/listPageSize + 4; s.lists > limit {
		t.Fatalf("%d List requests for %d streams, want at most %d", s.lists, n+1, limit)
	}
	t.Logf("%d List requests for %d streams and %d objects", s.lists, n+1, 2*n+2501)
}

// GoneStreams lists exactly the stream directories that hold data or segment objects but no
// manifest with content: in the root namespace and in every basin directory, with or without
// its marker, long names included; live streams and tombstones without objects are not.
func TestGoneStreams(t *testing.T) {
	ctx := context.Background()
	s := objectstore.NewMemStore()
	long := strings.Repeat("n", 400) // cut into several path segments
	type dir struct {
		basin, name             string
		manifest, data, seg     bool
		tombstone, marker, gone bool
	}
	dirs := []dir{
		{name: "live", manifest: true, data: true, seg: true},
		{name: "deleted", data: true, gone: true},
		{name: "segments-only", seg: true, gone: true},
		{name: "tombstoned", tombstone: true, data: true, gone: true},
		{name: "tombstone-only", tombstone: true},
		{name: long, data: true, gone: true},
		{name: long + "x", manifest: true, data: true},
		{basin: "has-marker", marker: true, name: "a", data: true, gone: true},
		{basin: "has-marker", marker: true, name: "b", manifest: true, data: true},
		{basin: "no-marker", name: "a", data: true, gone: true},
		{basin: "no-marker-2", name: "z/y", seg: true, data: true, gone: true},
	}
	var want []stream.Stream
	for _, d := range dirs {
		st, err := stream.Locate(d.basin, d.name)
		if err != nil {
			t.Fatal(err)
		}
		if d.marker {
			mustPut(t, s, BasinMarker(d.basin))
		}
		if d.manifest {
			mustPut(t, s, st.ManifestKey())
		}
		if d.tombstone {
			if _, err := objectstore.PutBytes(ctx, s, st.ManifestKey(), nil, objectstore.Unconditional()); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; d.data && i < 3; i++ {
			mustPut(t, s, fmt.Sprintf("%s/%028x", st.DataPrefix(), i))
		}
		for i := 0; d.seg && i < 3; i++ {
			mustPut(t, s, fmt.Sprintf("%s.seg/%d", st.ManifestKey(), i))
		}
		if d.gone {
			want = append(want, st)
		}
	}
	got, err := GoneStreams(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	key := func(st stream.Stream) string { return st.Basin() + "|" + st.Name() }
	sort.Slice(got, func(i, j int) bool { return key(got[i]) < key(got[j]) })
	sort.Slice(want, func(i, j int) bool { return key(want[i]) < key(want[j]) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("gone streams:\n got %v\nwant %v", got, want)
	}
}

// TestListBasinsLexicographic: S2 lists basins in lexicographic order of their names, and the
// SDK's listAll pages with start_after = the last name of a page. Markers are keyed
// "basins/<name>/basin", where '-' sorts below '/': ListBasins listed "bb-basin-x" before
// "bb-basin", and start_after=bb-basin (the SDK's cursor after a page ending there) skipped
// every "bb-basin-…" basin. Every page, from every cursor and with every limit, must be the
// sorted names' slice; a basin's streams and basins without a marker are not listed.
func TestListBasinsLexicographic(t *testing.T) {
	s := objectstore.NewMemStore()
	names := []string{"bb-basin", "bb-basin-x", "bb-basin-x-y", "bb-basin-x0", "bb-basin-z", "bb-basin0", "bb-basina", "cc-basin", "bb-bas-in"}
	for _, n := range names {
		mustPut(t, s, BasinMarker(n))
		st, err := stream.Locate(n, "stream-1")
		if err != nil {
			t.Fatal(err)
		}
		mustPut(t, s, st.ManifestKey())
	}
	mustPut(t, s, "basins/bb-basin-nomarker/streams/x/manifest")
	slices.Sort(names)
	cursors := append([]string{"", "bb-basin-w", "bb-basin-x-", "a"}, names...)
	for _, prefix := range []string{"", "bb-basin", "bb-basin-", "bb-basin-x", "zzz"} {
		checkListBasins(t, s, names, prefix, cursors)
	}
}

// checkListBasins checks ListBasins on s, whose basins are names (sorted), for prefix: from
// each cursor with each limit up to len(names)+1 against the names that follow it, and
// paging as the SDK's listAll does (limits 1 to 3), which must reach every basin once, in
// order.
func checkListBasins(t *testing.T, s objectstore.Store, names []string, prefix string, cursors []string) {
	t.Helper()
	ctx := context.Background()
	var want []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			want = append(want, n)
		}
	}
	for _, after := range cursors {
		var rest []string
		for _, n := range want {
			if n > after {
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
				t.Fatalf("names %q prefix %q limit %d: paging does not end", names, prefix, limit)
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
		if !slices.Equal(paged, want) {
			t.Fatalf("names %q prefix %q limit %d: paged %q, want %q", names, prefix, limit, paged, want)
		}
	}
}
