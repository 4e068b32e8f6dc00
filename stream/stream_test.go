package stream

import (
	"errors"
	"strings"
	"testing"
)

// TestNewRefusesSharedDefaultDataPrefix: a manifest of its own beside the default data prefix
// is refused, since two streams that share a data prefix delete each other's batch objects in
// garbage collection; both set, or both the defaults, are fine.
func TestNewRefusesSharedDefaultDataPrefix(t *testing.T) {
	_, err := New("a/manifest", DefaultDataPrefix)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"ingest"`) || !strings.Contains(err.Error(), `"a/data"`) {
		t.Fatalf("manifest a/manifest beside the default data prefix: %v", err)
	}
	s, err := New("a/manifest", "a/data")
	if err != nil {
		t.Fatalf("manifest and data prefix both set: %v", err)
	}
	if s.ManifestKey() != "a/manifest" || s.DataPrefix() != "a/data" || s.SegmentPrefix() != "a/manifest.seg/" {
		t.Fatalf("New gave %#v", s)
	}
	d, err := New(DefaultManifestKey, DefaultDataPrefix)
	if err != nil || d != Default() {
		t.Fatalf("New(defaults) = %#v, %v; want Default()", d, err)
	}
}

// TestNewReportsEveryProblem: invalid keys are refused, each problem reported.
func TestNewReportsEveryProblem(t *testing.T) {
	_, err := New("/abs", "")
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 2 {
		t.Fatalf("want 2 problems, got %d: %v", n, err)
	}
	for _, bad := range [][2]string{{"", "d"}, {"m", "a/../b"}, {"m/", "d"}, {"m", "d/"}} {
		if _, err := New(bad[0], bad[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%q, %q) = %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

// TestLocateLayout: a named stream's keys follow the layout of the package doc, and only
// the zero Stream is zero.
func TestLocateLayout(t *testing.T) {
	s, err := Locate("my-basin", "a/b")
	if err != nil {
		t.Fatal(err)
	}
	if s.ManifestKey() != "basins/my-basin/streams/a%2Fb/manifest" || s.DataPrefix() != "basins/my-basin/streams/a%2Fb/data" ||
		s.SegmentPrefix() != "basins/my-basin/streams/a%2Fb/manifest.seg/" || s.Name() != "a/b" || s.Basin() != "my-basin" || s.String() != "my-basin/a/b" {
		t.Fatalf("Locate gave %#v", s)
	}
	r, _ := Locate("", "x")
	if r.ManifestKey() != "streams/x/manifest" || r.DataPrefix() != "streams/x/data" || r.String() != "x" {
		t.Fatalf("Locate in the root namespace gave %#v", r)
	}
	if s.IsZero() || Default().IsZero() || !(Stream{}).IsZero() {
		t.Fatal("IsZero wrong")
	}
}
