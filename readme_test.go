package sluice_test

import (
	"os"
	"strings"
	"testing"
)

// The README prints the quick-start program whole; examples/quickstart is that program, built
// and vetted with the rest of the module. The two must not drift apart.
func TestReadmePrintsTheQuickStartProgram(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("examples/quickstart/main.go")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(readme)
	for {
		_, after, ok := strings.Cut(rest, "```go\n")
		if !ok {
			break
		}
		block, tail, ok := strings.Cut(after, "```\n")
		if !ok {
			t.Fatal("README.md has a Go block that does not end")
		}
		blocks, rest = append(blocks, block), tail
	}
	for _, b := range blocks {
		if b == string(prog) {
			return
		}
	}
	t.Fatalf("README.md has %d Go blocks and none is examples/quickstart/main.go as it is", len(blocks))
}
