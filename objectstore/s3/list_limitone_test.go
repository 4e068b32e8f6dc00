package s3_test

import (
	"context"
	"net/http"
	"testing"
)

// Limit 1 (the store asks for 2, TestS3ListOneKeyMinIO), the server (asked for 2) returns both keys that exist, IsTruncated false:
// the page must hold the first key and report more (NextStartAfter = that key); the next page
// holds the second and reports no more. Also with a start-after and with exactly one key.
func TestS3ListPageLimitOneTwoKeys(t *testing.T) {
	ctx := context.Background()
	var asked []string
	keys := []string{"p/a", "p/b"}
	plain := listServer(t, keys)
	s, _ := fakeS3(t, func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Query().Get("max-keys"))
		plain(w, r)
	})
	page, err := s.List(ctx, "p/", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "p/a" || page.NextStartAfter != "p/a" {
		t.Fatalf("page 1: %+v next %q", page.Objects, page.NextStartAfter)
	}
	page, err = s.List(ctx, "p/", page.NextStartAfter, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].Key != "p/b" || page.NextStartAfter != "" {
		t.Fatalf("page 2: %+v next %q", page.Objects, page.NextStartAfter)
	}
	page, err = s.List(ctx, "p/", "p/b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 0 || page.NextStartAfter != "" {
		t.Fatalf("page 3: %+v next %q", page.Objects, page.NextStartAfter)
	}
	for _, a := range asked {
		if a == "1" {
			t.Fatalf("asked for max-keys=1: %q", asked)
		}
	}
}
