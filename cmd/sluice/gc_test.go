package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type gcReport struct {
	Stream         string `json:"stream"`
	Basin          string `json:"basin"`
	EntriesDropped int    `json:"entries_dropped"`
	Listed         int    `json:"listed"`
	Referenced     int    `json:"referenced"`
	Deleted        int    `json:"deleted"`
	DeleteErrors   int    `json:"delete_errors"`
	Error          string `json:"error"`
}

// gcUntil runs gc --once until the stream's reports add up to at least minDeleted deleted
// objects (object ages are judged by the store's clock, which may count whole seconds), and
// returns the sums for that stream.
func (c *cli) gcUntil(stream string, minDeleted int) (dropped, deleted int) {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, r := range jsonLines[gcReport](c.t, c.ok("", "gc", "--once", "--grace-period", "1ms", "--keep-recent", "0s").stdout) {
			if r.Error != "" || r.DeleteErrors != 0 {
				c.t.Fatalf("gc report %+v", r)
			}
			if r.Stream == stream && r.Basin == "" {
				dropped += r.EntriesDropped
				deleted += r.Deleted
			}
		}
		if deleted >= minDeleted {
			return dropped, deleted
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("gc deleted %d objects of %q within a minute, want >= %d", deleted, stream, minDeleted)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestGCOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		// Three batch objects (three appends), then a trim past the first two.
		c.ok("", "stream", "create", "t")
		for i := range 3 {
			c.ok(fmt.Sprintf("a%d\nb%d\n", i, i), "append", "t")
		}
		c.ok("", "trim", "t", "4")
		// A stream in a basin is collected too.
		c.ok("", "stream", "create", "t", "--basin", "basin-one")
		c.ok("x\n", "append", "t", "--basin", "basin-one")

		dropped, deleted := c.gcUntil("t", 2)
		if dropped != 2 || deleted != 2 {
			t.Fatalf("gc dropped %d entries and deleted %d objects, want 2 and 2", dropped, deleted)
		}
		reps := jsonLines[gcReport](t, c.ok("", "gc", "--once").stdout)
		if len(reps) != 2 || reps[1].Basin != "basin-one" || reps[1].Referenced != 1 {
			t.Fatalf("gc reports = %+v", reps)
		}
		// Reads still see everything from the trim point on.
		if out := c.ok("", "read", "t", "--format", "raw", "--skip-commands").stdout; out != "a2\nb2\n" {
			t.Fatalf("read after gc = %q", out)
		}

		// Queue mode: once the only group has acknowledged everything, gc leaves no object.
		c.ok("", "stream", "create", "jobs", "--queue-mode")
		c.ok("j1\nj2\n", "append", "jobs")
		c.ok("j3\n", "append", "jobs")
		c.ok("", "consume", "jobs", "--group", "workers", "--stop-at-tail", "--exec", "cat >/dev/null")
		if dropped, _ := c.gcUntil("jobs", 2); dropped != 2 {
			t.Fatalf("queue gc dropped %d entries, want 2", dropped)
		}
		ins := decodeJSON[inspectJSON](t, c.ok("", "inspect", "jobs").stdout)
		if len(ins.Entries) != 0 || ins.Tail.SeqNum != 3 {
			t.Fatalf("drained queue: %d entries, tail %+v", len(ins.Entries), ins.Tail)
		}

		c.fails("", []string{"--once"}, "gc")
		c.fails("", []string{"--grace-period"}, "gc", "--once", "--grace-period", "0s")
		r := c.run("", "gc", "--help")
		if !strings.Contains(r.stdout, "--grace-period") || !strings.Contains(r.stdout, "store's own clock") {
			t.Fatalf("gc --help:\n%s", r.stdout)
		}
	})
}

// TestGCOnceListsEveryObject: one gc --once run lists every object of a stream, in rounds of
// --max-list, rather than the first --max-list objects each run (which a cron job would
// repeat forever, never reaching the rest).
func TestGCOnceListsEveryObject(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "t")
		const appends = 7
		for i := range appends {
			c.ok(fmt.Sprintf("r%d\n", i), "append", "t")
		}
		reps := jsonLines[gcReport](t, c.ok("", "gc", "--once", "--max-list", "2").stdout)
		if len(reps) != 1 || reps[0].Error != "" {
			t.Fatalf("gc reports = %+v", reps)
		}
		if r := reps[0]; r.Listed < appends || r.Referenced != appends {
			t.Fatalf("gc --once --max-list 2 listed %d objects and saw %d referenced, want every one of the %d batch objects", r.Listed, r.Referenced, appends)
		}
		c.fails("", []string{"--max-list"}, "gc", "--once", "--max-list", "0")
	})
}

// TestGracePeriodRuleIsShared: gc's --grace-period and serve's --gc-grace-period follow one
// rule: refused unless more than 0 and less than 48h, and a warning below 10m (twice the
// producers' default commit deadline).
func TestGracePeriodRuleIsShared(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		grace       string
		ok, warning bool
	}{
		{"0s", false, false},
		{"1s", true, true},
		{"9m59s", true, true},
		{"10m", true, false},
		{"47h", true, false},
		{"48h", false, false},
	} {
		gcRun := sluice(t, dir, "", nil, "gc", "--once", "--store", "mem://", "--grace-period", c.grace)
		if (gcRun.code == 0) != c.ok || strings.Contains(gcRun.stderr, "shorter than twice") != c.warning {
			t.Errorf("gc --once --grace-period %s: exit %d, stderr %q; want ok %v, warning %v", c.grace, gcRun.code, gcRun.stderr, c.ok, c.warning)
		}
		if !c.ok {
			d, err := time.ParseDuration(c.grace)
			if err != nil {
				t.Fatal(err)
			}
			r := sluice(t, dir, "", nil, "serve", "--listen", "127.0.0.1:0", "--store", "mem://", "--gc-grace-period", c.grace)
			if r.code == 0 || !strings.Contains(r.stderr, "invalid value "+d.String()+" for --gc-grace-period: must be more than 0 and less than") {
				t.Errorf("serve --gc-grace-period %s: exit %d, stderr %q, want it refused as gc refuses it", c.grace, r.code, r.stderr)
			}
			if !strings.Contains(gcRun.stderr, "invalid value "+d.String()+" for --grace-period: must be more than 0 and less than") {
				t.Errorf("gc --grace-period %s: stderr %q", c.grace, gcRun.stderr)
			}
			continue
		}
		_, logs := startServeLogs(t, dir, nil, "--store", "mem://", "--gc-grace-period", c.grace)
		if strings.Contains(logs(), "shorter than twice") != c.warning {
			t.Errorf("serve --gc-grace-period %s: logs %q, want warning %v", c.grace, logs(), c.warning)
		}
	}
}
