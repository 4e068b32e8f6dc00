package main

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestServeAsCommitter: a daemon run with --advertise-url commits for three `sluice append
// --committer` processes on one stream; inspect shows it
// as the stream's committer, and every line is read back once.
func TestServeAsCommitter(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr
	base := startServe(t, dir, nil, "--store", "./d", "--listen", addr, "--advertise-url", url)
	sluiceOK(t, dir, "", nil, "stream", "create", "s", "--store", "./d")
	const writers, lines = 3, 3000
	var wg sync.WaitGroup
	for w := range writers {
		var in strings.Builder
		for i := range lines {
			fmt.Fprintf(&in, "w%d-%d\n", w, i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := sluice(t, dir, in.String(), nil, "append", "s", "--store", "./d", "--committer", base, "--linger", "0")
			if r.code != 0 {
				t.Errorf("writer %d: exit %d: %s", w, r.code, r.stderr)
			}
		}()
	}
	wg.Wait()
	ins := decodeJSON[inspectJSON](t, sluiceOK(t, dir, "", nil, "inspect", "s", "--store", "./d"))
	if ins.Committer == nil || ins.Committer.URL != url {
		t.Fatalf("inspect shows committer %+v, want the daemon at %s", ins.Committer, url)
	}
	if ins.Tail.SeqNum != writers*lines {
		t.Fatalf("tail %d, want %d", ins.Tail.SeqNum, writers*lines)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(sluiceOK(t, dir, "", nil, "read", "s", "--store", "./d", "--format", "raw")), "\n") {
		if seen[l] {
			t.Fatalf("line %q read twice", l)
		}
		seen[l] = true
	}
	if len(seen) != writers*lines {
		t.Fatalf("read %d distinct lines, want %d", len(seen), writers*lines)
	}
	_, metrics := httpGet(t, base+"/metrics")
	m := regexp.MustCompile(`(?m)^sluice_committer_batches_per_write_(sum|count) (\S+)$`).FindAllStringSubmatch(metrics, -1)
	if len(m) != 2 {
		t.Fatalf("no committer metrics:\n%s", metrics)
	}
	sum, _ := strconv.ParseFloat(m[0][2], 64)
	count, _ := strconv.ParseFloat(m[1][2], 64)
	if count == 0 || sum < writers {
		t.Fatalf("the committer wrote %v times for %v batches: want every writer's batches", count, sum)
	}
	t.Logf("%v manifest writes for %v batches (%.1f per write)", count, sum, sum/count)
}
