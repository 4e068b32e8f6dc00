package main

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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

// TestDaemonsActAsOne: four daemons on one store, each a committer at the address it listens
// on (the default), take appends for one stream round-robin, as behind a load balancer. One holds the stream's role
// and commits for all; no append fails, and every record is in the stream once.
func TestDaemonsActAsOne(t *testing.T) {
	dir := t.TempDir()
	var bases []string
	for range 4 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		bases = append(bases, startServe(t, dir, nil, "--store", "./d", "--listen", addr))
	}
	do := apiCaller(t, bases[0], "lb-basin")
	for _, c := range [][3]string{{"POST", "/v1/basins", `{"basin":"lb-basin"}`}, {"POST", "/v1/streams", `{"stream":"s"}`}} {
		if code, body := do(c[0], c[1], c[2]); code/100 != 2 {
			t.Fatalf("%s %s: %d %s", c[0], c[1], code, body)
		}
	}
	const clients, appends, perAppend = 4, 30, 10
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range appends {
				var recs []string
				for r := range perAppend {
					recs = append(recs, fmt.Sprintf(`{"body":"c%d-a%d-r%d"}`, c, a, r))
				}
				call := apiCaller(t, bases[(c+a)%len(bases)], "lb-basin")
				if code, body := call("POST", "/v1/streams/s/records", `{"records":[`+strings.Join(recs, ",")+`]}`); code != 200 {
					t.Errorf("client %d append %d: %d %s", c, a, code, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for from := 0; from < clients*appends*perAppend; from += 1000 {
		code, body := do("GET", fmt.Sprintf("/v1/streams/s/records?seq_num=%d&count=1000", from), "")
		if code != 200 {
			t.Fatalf("read: %d %s", code, body)
		}
		for _, m := range regexp.MustCompile(`"body":"(c\d+-a\d+-r\d+)"`).FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Fatalf("record %s read twice", m[1])
			}
			seen[m[1]] = true
		}
	}
	if len(seen) != clients*appends*perAppend {
		t.Fatalf("read %d records, want %d", len(seen), clients*appends*perAppend)
	}
	holders := 0
	for _, b := range bases {
		_, metrics := httpGet(t, b+"/metrics")
		if m := regexp.MustCompile(`(?m)^sluice_committer_manifest_writes_total (\S+)$`).FindStringSubmatch(metrics); m != nil && m[1] != "0" {
			holders++
		}
	}
	if holders != 1 {
		t.Fatalf("%d daemons committed as the committer, want exactly one", holders)
	}
}

// TestServeCommitterDefault: a daemon is a committer at the URL derived from --listen unless
// --no-committer; then no role is taken and the commit endpoint is not served.
func TestServeCommitterDefault(t *testing.T) {
	for _, off := range []bool{false, true} {
		dir := t.TempDir()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		args := []string{"--store", "./d", "--listen", addr}
		if off {
			args = append(args, "--no-committer")
		}
		base := startServe(t, dir, nil, args...)
		do := apiCaller(t, base, "cdefault-basin")
		for _, c := range [][3]string{{"POST", "/v1/basins", `{"basin":"cdefault-basin"}`}, {"POST", "/v1/streams", `{"stream":"s"}`}, {"POST", "/v1/streams/s/records", `{"records":[{"body":"x"}]}`}} {
			if code, body := do(c[0], c[1], c[2]); code/100 != 2 {
				t.Fatalf("%s %s: %d %s", c[0], c[1], code, body)
			}
		}
		ins := decodeJSON[inspectJSON](t, sluiceOK(t, dir, "", nil, "inspect", "s", "--store", "./d", "--basin", "cdefault-basin"))
		if code, _ := do("POST", "/sluice/v1/commit", `{}`); off != (code == 404) {
			t.Fatalf("--no-committer %v: the commit endpoint answered %d", off, code)
		}
		switch {
		case off && ins.Committer != nil:
			t.Fatalf("--no-committer: the daemon took the role %+v", ins.Committer)
		case !off && (ins.Committer == nil || ins.Committer.URL != "http://"+addr):
			t.Fatalf("committer %+v, want the daemon at http://%s", ins.Committer, addr)
		}
	}
}

// TestCommitterTimeoutBoundsTheWait: a committer that takes the connection and never
// answers (a stopped process) holds a commit for --committer-timeout, not the default 10 s;
// then append commits directly and every line is acknowledged and read back. A timeout
// that is not positive is refused, naming the flag, by append and by consume.
func TestCommitterTimeoutBoundsTheWait(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	sluiceOK(t, dir, "", nil, "stream", "create", "s", "--store", "./d")
	const lines = 50
	var in strings.Builder
	for i := range lines {
		fmt.Fprintf(&in, "l%d\n", i)
	}
	start := time.Now()
	r := sluice(t, dir, in.String(), nil, "append", "s", "--store", "./d", "--committer", "http://"+ln.Addr().String(),
		"--committer-timeout", "300ms", "--linger", "0")
	took := time.Since(start)
	if r.code != 0 {
		t.Fatalf("append: exit %d: %s", r.code, r.stderr)
	}
	if took > 8*time.Second {
		t.Errorf("append took %v with --committer-timeout 300ms: it waited for the default", took)
	}
	if n := strings.Count(r.stdout, "\n"); n != lines {
		t.Errorf("%d acks, want %d (--linger 0: one per line)", n, lines)
	}
	if got := strings.Count(sluiceOK(t, dir, "", nil, "read", "s", "--store", "./d", "--format", "raw"), "\n"); got != lines {
		t.Errorf("read %d records, want %d", got, lines)
	}
	t.Logf("append through an unanswering committer took %v", took)
	for _, args := range [][]string{
		{"append", "s", "--store", "./d", "--committer-timeout", "0s"},
		{"consume", "s", "--store", "./d", "--group", "g", "--exec", "cat", "--committer-timeout", "-1s"},
	} {
		if r := sluice(t, dir, "x\n", nil, args...); r.code == 0 || !strings.Contains(r.stderr, "--committer-timeout") {
			t.Errorf("%v: exit %d, stderr %q; want an error naming --committer-timeout", args, r.code, strings.TrimSpace(r.stderr))
		}
	}
}

// TestServeCommitterLeaseFlag: --committer-lease must be positive and under the
// committer's idle timeout (1 min), and a bad one is refused with a message that names the
// flag; --help gives the default, 10 s.
func TestServeCommitterLeaseFlag(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"0s", "-1s", "1m", "2h"} {
		r := sluice(t, dir, "", nil, "serve", "--listen", "127.0.0.1:0", "--store", "mem://", "--committer-lease", v)
		if r.code == 0 || !strings.Contains(r.stderr, "--committer-lease") {
			t.Errorf("serve --committer-lease %s: exit %d, stderr %q; want an error naming --committer-lease", v, r.code, strings.TrimSpace(r.stderr))
		}
	}
	r := sluice(t, dir, "", nil, "serve", "--help")
	line := ""
	for l := range strings.Lines(r.stdout) {
		if strings.Contains(l, "--committer-lease duration") {
			line = l
		}
	}
	if r.code != 0 || !strings.Contains(line, "(default 10s)") {
		t.Errorf("serve --help: exit %d, no --committer-lease line with its default 10s:\n%s", r.code, r.stdout)
	}
}
