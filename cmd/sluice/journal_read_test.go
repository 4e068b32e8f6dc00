package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/journaltest"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/stream"
)

// TestJournalTailAndRead: on the store backend, tail and read of a stream whose commits are
// partly in journal windows the manifest does not show see every committed record.
func TestJournalTailAndRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	c := newCLI(t, backend{name: "file"})
	fs, err := file.New(c.dir + "/sluice-data")
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	loc, err := stream.Locate("", "j")
	if err != nil {
		t.Fatal(err)
	}
	s := journaltest.New(t, fs, loc.ManifestKey(), journal.ID(rng.Uint64()))
	s.Direct([]string{"d0", "d1"})
	for w := range 3 {
		s.Window(journaltest.RandomBatches(rng, fmt.Sprintf("w%d", w))...)
	}
	tl := decodeJSON[map[string]pos](t, c.ok("", "tail", "j").stdout)
	if got := tl["tail"]; got.SeqNum != s.Full.Tail.SeqNum || got.Timestamp != s.Full.Tail.Timestamp {
		t.Fatalf("tail = %+v, want %+v", got, s.Full.Tail)
	}
	var want strings.Builder
	for _, r := range s.Want {
		want.WriteString(r.Body + "\n")
	}
	if got := c.ok("", "read", "j", "--format", "raw").stdout; got != want.String() {
		t.Fatalf("read:\n%s\nwant:\n%s", got, want.String())
	}
}
