package engine

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

func listEnv(t *testing.T) *servertest.Env {
	t.Helper()
	return servertest.Start(t, func(t testing.TB) server.Backend {
		return newEngine(t, objectstore.NewMemStore(), nil).S2()
	})
}

func listGet(t *testing.T, env *servertest.Env, path string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", env.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", servertest.TestBasin)
	res, err := env.H1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return b
}

// TestListStreamsLexicographicStartAfter: S2-API.md: "list streams | `GET /streams?prefix&start_after&limit` | 200 `{streams, has_more}`",
// and "The SDK's installed package (`dist/`, `.d.ts`, …) is the authority where this page is
// unclear"; the SDK's types.gen.d.ts documents start_after as "Filter to streams whose names
// lexicographically start after this string." Seed 003 encourages such names: "Stream names can
// include slashes (/) and dots (.) which makes hierarchical naming schemes possible."
//
// The engine listed in the order of its escaped store keys ('%' sorts below '-', digits and
// letters), so start_after=a-1 returned "a", and "a/x" came before "a-1".
func TestListStreamsLexicographicStartAfter(t *testing.T) {
	env := listEnv(t)
	for _, n := range []string{"a", "a-1", "a/x", "a.b", "ab"} {
		env.CreateStream(t, n)
	}
	names := func(path string) []string {
		var l s2api.ListStreamsResponse
		if err := json.Unmarshal(listGet(t, env, path), &l); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range l.Streams {
			out = append(out, s.Name)
		}
		return out
	}
	all := names("/v1/streams")
	if !slices.IsSorted(all) {
		t.Errorf("list streams is not in lexicographic order: %q", all)
	}
	after := names("/v1/streams?start_after=a-1")
	for _, n := range after {
		if n <= "a-1" {
			t.Errorf("start_after=a-1 returned %q, which does not sort after a-1 (page %q)", n, after)
		}
	}
	if want := []string{"a.b", "a/x", "ab"}; !slices.Equal(after, want) {
		t.Errorf("start_after=a-1: got %q, want %q", after, want)
	}
}
