package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Several append processes (producers that share nothing but the store) write into one
// stream at once: every record lands exactly once, each process's acks are in order, and the
// acks of all processes tile the stream without overlap.
func TestConcurrentAppendProcesses(t *testing.T) {
	const procs, lines = 4, 1500
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "shared")
		results := make([]result, procs)
		var wg sync.WaitGroup
		for p := range procs {
			var in strings.Builder
			for i := range lines {
				fmt.Fprintf(&in, "p%d-%d\n", p, i)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[p] = sluice(t, c.dir, in.String(), nil, append([]string{"append", "shared"}, c.b.args...)...)
			}()
		}
		wg.Wait()
		var all []ack
		for p, r := range results {
			if r.code != 0 {
				t.Fatalf("append process %d: exit %d: %s", p, r.code, r.stderr)
			}
			acks := jsonLines[ack](t, r.stdout)
			n := uint64(0)
			for i, a := range acks {
				if i > 0 && a.Start.SeqNum < acks[i-1].End.SeqNum {
					t.Fatalf("process %d: ack %d %+v starts before the previous one ends", p, i, a)
				}
				n += a.End.SeqNum - a.Start.SeqNum
			}
			if n != lines {
				t.Fatalf("process %d: acks cover %d records, want %d", p, n, lines)
			}
			all = append(all, acks...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Start.SeqNum < all[j].Start.SeqNum })
		checkAcks(t, all, 0, procs*lines)

		// The stream holds every line once, each process's lines in its order.
		recs := jsonLines[readRec](t, c.ok("", "read", "shared").stdout)
		if len(recs) != procs*lines {
			t.Fatalf("read %d records, want %d", len(recs), procs*lines)
		}
		next := make([]int, procs)
		for _, r := range recs {
			var p, i int
			if _, err := fmt.Sscanf(r.Body, "p%d-%d", &p, &i); err != nil || p < 0 || p >= procs || i != next[p] {
				t.Fatalf("record %d %q out of order (want p%d-%d)", r.SeqNum, r.Body, p, next[p])
			}
			next[p]++
		}
	})
}
