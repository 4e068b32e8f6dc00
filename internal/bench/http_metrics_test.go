package bench

import (
	"maps"
	"strings"
	"testing"
)

// TestParseOpCountsSumsResultsByOp: the daemon's object-store counter is summed over its
// results per op and purpose (other for a sample without one, from an older daemon); other families, comments and malformed lines are ignored; a page without
// the family is "unknown", not zero.
func TestParseOpCountsSumsResultsByOp(t *testing.T) {
	page := `# HELP sluice_objectstore_operations_total Object store operations.
# TYPE sluice_objectstore_operations_total counter
sluice_objectstore_operations_total{op="get",purpose="poll",result="ok"} 12
sluice_objectstore_operations_total{op="get",purpose="poll",result="not_found"} 3
sluice_objectstore_operations_total{op="get",purpose="fetch",result="ok"} 2
sluice_objectstore_operations_total{op="put",purpose="commit",result="ok"} 7
sluice_objectstore_operations_total{result="ok",op="list"} 1e1
sluice_objectstore_operations_total{op="head"} x
sluice_objectstore_bytes_total{op="get"} 999
go_goroutines 10
`
	got, ok := parseOpCounts(strings.NewReader(page))
	want := map[string]int64{"get/poll": 15, "get/fetch": 2, "put/commit": 7, "list/other": 10}
	if !ok || !maps.Equal(got, want) {
		t.Errorf("parseOpCounts = %v, %v; want %v, true", got, ok, want)
	}
	if _, ok := parseOpCounts(strings.NewReader("go_goroutines 10\n")); ok {
		t.Error("a page without sluice_objectstore_operations_total counted as known")
	}
}
