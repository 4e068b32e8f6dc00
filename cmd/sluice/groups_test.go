package main

import (
	"bufio"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
)

// appendStamped appends n records with client timestamps from ts on, 1 ms apart, and
// returns their timestamps.
func (c *cli) appendStamped(stream string, n int, ts int64) []int64 {
	c.t.Helper()
	var in strings.Builder
	var out []int64
	for i := range n {
		fmt.Fprintf(&in, `{"body":"r%d","timestamp":%d}`+"\n", i, ts+int64(i))
		out = append(out, ts+int64(i))
	}
	c.ok(in.String(), "append", stream, "--format", "json")
	return out
}

// groupLines runs groups list and returns its lines by group.
func (c *cli) groupLines(stream string, args ...string) map[string]groupJSONLine {
	c.t.Helper()
	out := map[string]groupJSONLine{}
	for _, l := range jsonLines[groupJSONLine](c.t, c.ok("", append([]string{"groups", "list", stream}, args...)...).stdout) {
		out[l.Group] = l
	}
	return out
}

// checkAge fails unless secs is the age of a record stamped ts, as seen between before and
// after.
func checkAge(t *testing.T, what string, secs float64, ts int64, before, after time.Time) {
	t.Helper()
	lo, hi := float64(before.UnixMilli()-ts)/1000, float64(after.UnixMilli()-ts)/1000
	if secs < lo || secs > hi {
		t.Fatalf("%s: lag_seconds %v, want the age of the record stamped %d: in [%v, %v]", what, secs, ts, lo, hi)
	}
}

// TestGroupsListShowsLag: after a member consumed part of a stream, groups list shows its
// epoch, checkpoint and real lag (records to the tail, age of the first unacknowledged
// record by its timestamp); a caught-up group shows 0 and 0.
func TestGroupsListShowsLag(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(testseed.Get(t), 26))
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		if out := c.ok("", "groups", "list", "q").stdout; out != "" {
			t.Fatalf("groups list of a stream without groups: %q", out)
		}
		n1, n2 := 1+rng.IntN(10), 1+rng.IntN(10)
		base := time.Now().Add(-2 * time.Hour).UnixMilli()
		c.appendStamped("q", n1, base)
		c.ok("", "consume", "q", "--group", "done", "--stop-at-tail", "--exec", "cat >/dev/null")
		c.ok("", "consume", "q", "--group", "behind", "--stop-at-tail", "--exec", "cat >/dev/null")
		first := c.groupLines("q") // the epochs each group got from its first member
		if len(first) != 2 || first["done"].Epoch == 0 || first["behind"].Epoch == 0 {
			t.Fatalf("groups after their first members: %+v", first)
		}
		second := c.appendStamped("q", n2, base+3_600_000)
		c.ok("", "consume", "q", "--group", "done", "--stop-at-tail", "--exec", "cat >/dev/null")
		before := time.Now()
		got := c.groupLines("q")
		after := time.Now()
		if len(got) != 2 {
			t.Fatalf("groups: %+v", got)
		}
		if g := got["done"]; g.Epoch != first["done"].Epoch+1 || g.Checkpoint != uint64(n1+n2) || g.LagRecords != 0 || g.LagSeconds != 0 {
			t.Fatalf("caught-up group: %+v, want epoch %d (its second member)", g, first["done"].Epoch+1)
		}
		g := got["behind"]
		if want := first["behind"].Epoch; g.Epoch != want || g.Checkpoint != uint64(n1) || g.LagRecords != uint64(n2) {
			t.Fatalf("lagging group: %+v, want epoch %d, checkpoint %d, lag_records %d", g, want, n1, n2)
		}
		checkAge(t, "lagging group", g.LagSeconds, second[0], before, after)

		// Mid-batch: the checkpoint inside the second append's batch object.
		k := rng.IntN(n2)
		c.ok("", "groups", "reset", "q", "behind", "--to-seq-num", strconv.Itoa(n1+k))
		before = time.Now()
		g = c.groupLines("q")["behind"]
		checkAge(t, "mid-batch", g.LagSeconds, second[k], before, time.Now())
		if g.LagRecords != uint64(n2-k) {
			t.Fatalf("mid-batch: %+v, want lag_records %d", g, n2-k)
		}
	})
}

// TestGroupsResetFencesMember: a reset of a running member's group fences it (consume exits 1
// at its next acknowledgement or read), and the next member starts at the reset position;
// --to-timestamp and --to-tail land where they say; exactly one target is required; an
// unknown group is created with a notice.
func TestGroupsResetFencesMember(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(testseed.Get(t), 27))
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		n := 3 + rng.IntN(8)
		base := time.Now().Add(-time.Hour).UnixMilli()
		stamps := c.appendStamped("q", n, base)
		a := c.start("consume", "q", "--group", "g", "--format", "raw", "--exec", "cat")
		for i := range n {
			if l := a.next(); l != fmt.Sprintf("r%d", i) {
				t.Fatalf("member line %d = %q", i, l)
			}
		}
		member := c.groupLines("q")["g"].Epoch // the running member's
		if member == 0 {
			t.Fatal("no group g while its member runs")
		}
		k := rng.IntN(n)
		reset := decodeJSON[groupJSONLine](t, c.ok("", "groups", "reset", "q", "g", "--to-seq-num", strconv.Itoa(k)).stdout)
		if reset.Checkpoint != uint64(k) || reset.Epoch != member+1 || reset.LagRecords != uint64(n-k) {
			t.Fatalf("reset line: %+v, want one bump of the member's epoch %d", reset, member)
		}
		c.appendStamped("q", 1, base+int64(n))
		if code := a.wait(); code != 1 || !strings.Contains(a.stderr.String(), "another member took over") {
			t.Fatalf("member of the reset group exited %d; stderr:\n%s", code, a.stderr.String())
		}
		if g := c.groupLines("q")["g"]; g.Checkpoint != uint64(k) || g.Epoch != reset.Epoch {
			t.Fatalf("after the fenced member: %+v, want checkpoint %d epoch %d", g, k, reset.Epoch)
		}
		out := filepath.Join(c.dir, "out.txt")
		c.env = []string{"OUT=" + out}
		c.ok("", "consume", "q", "--group", "g", "--stop-at-tail", "--format", "raw", "--exec", `cat >> "$OUT"`)
		if got, _ := os.ReadFile(out); !strings.HasPrefix(string(got), fmt.Sprintf("r%d\n", k)) {
			t.Fatalf("member after the reset started with:\n%s", got)
		}

		w := rng.IntN(n)
		if g := decodeJSON[groupJSONLine](t, c.ok("", "groups", "reset", "q", "g", "--to-timestamp", strconv.FormatInt(stamps[w], 10)).stdout); g.Checkpoint != uint64(w) {
			t.Fatalf("--to-timestamp %d: %+v, want checkpoint %d", stamps[w], g, w)
		}
		if g := decodeJSON[groupJSONLine](t, c.ok("", "groups", "reset", "q", "g", "--to-tail").stdout); g.Checkpoint != uint64(n+1) || g.LagRecords != 0 {
			t.Fatalf("--to-tail: %+v", g)
		}
		c.fails("", []string{"exactly one of --to-seq-num N, --to-timestamp MS or --to-tail"}, "groups", "reset", "q", "g")
		c.fails("", []string{"exactly one of"}, "groups", "reset", "q", "g", "--to-tail", "--to-seq-num", "1")
		r := c.ok("", "groups", "reset", "q", "fresh", "--to-seq-num", "1")
		if !strings.Contains(r.stderr, `group "fresh" did not exist`) || decodeJSON[groupJSONLine](t, r.stdout).Checkpoint != 1 {
			t.Fatalf("reset of an unknown group: %+v", r)
		}
		c.fails("", []string{"does not exist"}, "groups", "reset", "nope", "g", "--to-tail")
	})
}

// TestGroupsDeleteFencesMember: deleting a running member's group fences it; the group leaves
// the list; deleting it again fails naming it.
func TestGroupsDeleteFencesMember(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		c.ok("r0\n", "append", "q")
		a := c.start("consume", "q", "--group", "g", "--format", "raw", "--exec", "cat")
		if l := a.next(); l != "r0" {
			t.Fatalf("member line %q", l)
		}
		c.ok("", "consume", "q", "--group", "other", "--stop-at-tail", "--exec", "cat >/dev/null")
		c.ok("", "groups", "delete", "q", "g")
		c.ok("r1\n", "append", "q")
		if code := a.wait(); code != 1 || !strings.Contains(a.stderr.String(), `group "g" was deleted`) {
			t.Fatalf("member of the deleted group exited %d; stderr:\n%s", code, a.stderr.String())
		}
		if got := c.groupLines("q"); len(got) != 1 || got["other"].Group != "other" {
			t.Fatalf("groups after delete: %+v", got)
		}
		c.fails("", []string{`no consumer group "g"`}, "groups", "delete", "q", "g")
		c.fails("", []string{"missing GROUP"}, "groups", "delete", "q")
	})
}

// TestConsumeStartAtTail: a new group with --start-at tail gets only records appended after
// it joined; an existing group resumes from its checkpoint whatever --start-at says.
func TestConsumeStartAtTail(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(testseed.Get(t), 28))
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "stream", "create", "q")
		n := 1 + rng.IntN(10)
		c.appendStamped("q", n, time.Now().UnixMilli()-10_000)
		out := filepath.Join(c.dir, "out.txt")
		c.env = []string{"OUT=" + out}
		c.ok("", "consume", "q", "--group", "late", "--start-at", "tail", "--stop-at-tail", "--format", "raw", "--exec", `cat >> "$OUT"`)
		if got, _ := os.ReadFile(out); len(got) != 0 {
			t.Fatalf("a new group at the tail consumed:\n%s", got)
		}
		if g := c.groupLines("q")["late"]; g.Checkpoint != uint64(n) {
			t.Fatalf("new group at the tail: %+v, want checkpoint %d", g, n)
		}
		c.ok("new\n", "append", "q")
		c.ok("", "consume", "q", "--group", "late", "--start-at", "tail", "--stop-at-tail", "--format", "raw", "--exec", `cat >> "$OUT"`)
		if got, _ := os.ReadFile(out); string(got) != "new\n" {
			t.Fatalf("the group at the tail then consumed:\n%s", got)
		}
		os.Remove(out)
		c.ok("", "consume", "q", "--group", "early", "--stop-at-tail", "--format", "raw", "--exec", `cat >> "$OUT"`)
		if got, _ := os.ReadFile(out); !strings.HasPrefix(string(got), "r0\n") {
			t.Fatalf("the default start is not the head:\n%s", got)
		}
		c.fails("", []string{"--start-at"}, "consume", "q", "--group", "x", "--start-at", "middle", "--exec", "cat")
	})
}

// freeAddr returns a local address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrapeGauge returns the value of the series of name whose labels include every want, as
// /metrics at url shows it, and whether there is one.
func scrapeGauge(t *testing.T, url, name string, want ...string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, false // not listening yet
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return 0, false
	}
	body := string(raw)
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
lines:
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, name+"{") {
			continue
		}
		for _, w := range want {
			if !strings.Contains(l, w) {
				continue lines
			}
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", l, err)
		}
		return v, true
	}
	return 0, false
}

// waitGauge waits up to 30 s for ok to accept the scraped value.
func waitGauge(t *testing.T, url, name string, ok func(float64) bool, want ...string) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, found := scrapeGauge(t, url, name, want...)
		if found && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v: %v (found %v) never right", name, want, v, found)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConsumeMetricsListen: consume --metrics-listen serves the member's lag: while its
// command holds record k, the records from k to the tail and the age of record k at the
// scrape; 0 and 0 once it is caught up.
func TestConsumeMetricsListen(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(testseed.Get(t), 29))
	c := newCLI(t, backend{name: "file"})
	c.ok("", "stream", "create", "q")
	n := 2 + rng.IntN(10)
	k := rng.IntN(n)
	stamps := c.appendStamped("q", n, time.Now().Add(-time.Hour).UnixMilli())
	done := filepath.Join(c.dir, "done")
	c.env = []string{"DONE=" + done, "HOLD=r" + strconv.Itoa(k)}
	addr := freeAddr(t)
	url := "http://" + addr + "/metrics"
	a := c.start("consume", "q", "--group", "m", "--format", "raw", "--metrics-listen", addr,
		"--exec", `read l; [ "$l" != "$HOLD" ] || while [ ! -e "$DONE" ]; do sleep 0.02; done; echo "$l"`)
	labels := []string{`group="m"`, `stream="q"`}
	waitGauge(t, url, "sluice_consumer_group_lag_records", func(v float64) bool { return v == float64(n-k) }, labels...)
	before := time.Now()
	secs, _ := scrapeGauge(t, url, "sluice_consumer_group_lag_seconds", labels...)
	checkAge(t, "held record", secs, stamps[k], before, time.Now()) // the age at the scrape
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if l := a.next(); l != fmt.Sprintf("r%d", i) {
			t.Fatalf("member line %d = %q", i, l)
		}
	}
	waitGauge(t, url, "sluice_consumer_group_lag_records", func(v float64) bool { return v == 0 }, labels...)
	waitGauge(t, url, "sluice_consumer_group_lag_seconds", func(v float64) bool { return v == 0 }, labels...)
	if code := a.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("consume exited %d; stderr:\n%s", code, a.stderr.String())
	}
}

// TestServeLagMetrics: the daemon exports the lag of the groups of the streams it serves, and
// each one's manifest size.
func TestServeLagMetrics(t *testing.T) {
	dir := t.TempDir()
	base := startServe(t, dir, nil, "--lag-interval", "50ms")
	api := apiCaller(t, base, "metrics-basin")
	if code, body := api("POST", "/v1/basins", `{"basin":"metrics-basin"}`); code/100 != 2 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	if code, body := api("POST", "/v1/streams", `{"stream":"orders"}`); code/100 != 2 {
		t.Fatalf("create stream: %d %s", code, body)
	}
	if code, body := api("POST", "/v1/streams/orders/records", `{"records":[{"body":"a"},{"body":"b"},{"body":"c"}]}`); code/100 != 2 {
		t.Fatalf("append: %d %s", code, body)
	}
	sluiceOK(t, dir, "", nil, "groups", "reset", "orders", "billing", "--basin", "metrics-basin", "--to-seq-num", "1")
	labels := []string{`basin="metrics-basin"`, `group="billing"`, `stream="orders"`}
	waitGauge(t, base+"/metrics", "sluice_consumer_group_lag_records", func(v float64) bool { return v == 2 }, labels...)
	waitGauge(t, base+"/metrics", "sluice_consumer_group_lag_seconds", func(v float64) bool { return v > 0 && v < 600 }, labels...)
	waitGauge(t, base+"/metrics", "sluice_manifest_size_bytes", func(v float64) bool { return v > 0 }, labels[0], labels[2])
}
