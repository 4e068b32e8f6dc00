package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchOut is the part of bench --json's object the tests check.
type benchOut struct {
	Target         string           `json:"target"`
	Store          string           `json:"store"`
	TempStore      bool             `json:"temporary_store"`
	Basin          string           `json:"basin"`
	Stream         string           `json:"stream"`
	Records        uint64           `json:"records"`
	RecordsPerS    float64          `json:"records_per_s"`
	MBPerS         float64          `json:"mb_per_s"`
	AckP50Ms       float64          `json:"ack_p50_ms"`
	AckP90Ms       float64          `json:"ack_p90_ms"`
	AckP99Ms       float64          `json:"ack_p99_ms"`
	AckMaxMs       float64          `json:"ack_max_ms"`
	E2ERecords     uint64           `json:"e2e_records"`
	E2EP50Ms       float64          `json:"e2e_p50_ms"`
	E2EP99Ms       float64          `json:"e2e_p99_ms"`
	E2EMaxMs       float64          `json:"e2e_max_ms"`
	Requests       map[string]int64 `json:"store_requests"`
	RequestsTotal  *int64           `json:"store_requests_total"`
	RequestsPerGiB *float64         `json:"store_requests_per_gib"`
}

// parseBench parses bench --json's stdout, which must be exactly one JSON object, and checks
// the figures are sane.
func parseBench(t *testing.T, stdout string) benchOut {
	t.Helper()
	if n := strings.Count(strings.TrimSpace(stdout), "\n"); n != 0 {
		t.Fatalf("bench --json printed %d lines, want one object:\n%s", n+1, stdout)
	}
	var o benchOut
	if err := json.Unmarshal([]byte(stdout), &o); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, stdout)
	}
	if o.Records == 0 || o.RecordsPerS <= 0 || o.MBPerS <= 0 {
		t.Errorf("%d records, %v records/s, %v MB/s: want some", o.Records, o.RecordsPerS, o.MBPerS)
	}
	if !(o.AckP50Ms > 0 && o.AckP50Ms <= o.AckP90Ms && o.AckP90Ms <= o.AckP99Ms && o.AckP99Ms <= o.AckMaxMs) {
		t.Errorf("ack p50 %v p90 %v p99 %v max %v: want 0 < p50 <= p90 <= p99 <= max", o.AckP50Ms, o.AckP90Ms, o.AckP99Ms, o.AckMaxMs)
	}
	if o.E2ERecords != o.Records || !(o.E2EP50Ms > 0 && o.E2EP50Ms <= o.E2EP99Ms && o.E2EP99Ms <= o.E2EMaxMs) {
		t.Errorf("e2e of %d of %d records: p50 %v p99 %v max %v: want all records, 0 < p50 <= p99 <= max", o.E2ERecords, o.Records, o.E2EP50Ms, o.E2EP99Ms, o.E2EMaxMs)
	}
	if o.RequestsTotal == nil || *o.RequestsTotal <= 0 || o.Requests["put"] <= 0 || o.RequestsPerGiB == nil || *o.RequestsPerGiB <= 0 {
		t.Errorf("store requests %v (total %v, per GiB %v): want puts counted", o.Requests, o.RequestsTotal, o.RequestsPerGiB)
	}
	if !strings.HasPrefix(o.Stream, "bench-") {
		t.Errorf("stream %q: want bench-<random>", o.Stream)
	}
	return o
}

// TestBenchOnFileStore: sluice bench on a file store for about a second prints one JSON
// object with sane figures, progress lines on stderr (plain lines: stderr is no terminal),
// an SVG with --plot, and leaves no stream behind.
func TestBenchOnFileStore(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	plot := filepath.Join(dir, "latency.svg")
	r := sluice(t, dir, "", nil, "bench", "--store", store, "--duration", "1200ms", "--producers", "2", "--record-size", "200", "--json", "--plot", plot)
	if r.code != 0 {
		t.Fatalf("bench: exit %d: %s", r.code, r.stderr)
	}
	o := parseBench(t, r.stdout)
	if o.Target != "store" || o.TempStore || o.Requests["get"] <= 0 {
		t.Errorf("target %q temporary %v gets %d: want the store given, its reader's gets counted", o.Target, o.TempStore, o.Requests["get"])
	}
	if !strings.Contains(r.stderr, "bench    1s:") || strings.Contains(r.stderr, "\r") {
		t.Errorf("stderr has no plain progress line for second 1:\n%q", r.stderr)
	}
	svg, err := os.ReadFile(plot)
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("--plot wrote no SVG: %v", err)
	}
	if list := sluiceOK(t, dir, "", nil, "stream", "list", "--store", store); list != "" {
		t.Errorf("streams left after bench: %s", list)
	}
}

// TestBenchDefaultStoreIsTemporary: without --store bench works in a new temporary
// directory, removes it, and does not create the default ./sluice-data.
func TestBenchDefaultStoreIsTemporary(t *testing.T) {
	dir := t.TempDir()
	o := parseBench(t, sluiceOK(t, dir, "", nil, "bench", "--duration", "300ms", "--rate", "2000", "--json"))
	if !o.TempStore || o.Store == "" {
		t.Fatalf("store %q temporary %v: want a temporary store", o.Store, o.TempStore)
	}
	if _, err := os.Stat(o.Store); !os.IsNotExist(err) {
		t.Errorf("the temporary store %s is still there (%v)", o.Store, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sluice-data")); !os.IsNotExist(err) {
		t.Errorf("bench created the default store ./sluice-data (%v)", err)
	}
}

// TestBenchThroughEndpoint: bench --endpoint against a daemon with an auth token (given to
// both through SLUICE_AUTH_TOKEN) measures through the API, counts the daemon's store
// requests from /metrics, and deletes what it made: its own basin without --basin, only
// its stream in a --basin given.
func TestBenchThroughEndpoint(t *testing.T) {
	dir := t.TempDir()
	env := []string{"SLUICE_AUTH_TOKEN=s3cret"}
	base := startServe(t, dir, env)
	o := parseBench(t, sluiceOK(t, dir, "", env, "bench", "--endpoint", base, "--duration", "1s", "--producers", "2", "--json"))
	if o.Target != "endpoint" || !strings.HasPrefix(o.Basin, "bench-") {
		t.Errorf("target %q basin %q: want endpoint, a basin bench-<random>", o.Target, o.Basin)
	}
	do := func(method, path, basin, body string) (int, string) {
		t.Helper()
		return apiCaller(t, base, basin, "s3cret")(method, path, body)
	}
	if code, body := do("GET", "/v1/basins", "x", ""); code != 200 || strings.Contains(body, "bench-") {
		t.Errorf("basins after bench: %d %s: want bench's basin deleted", code, body)
	}

	if code, body := do("POST", "/v1/basins", "mine-basin", `{"basin":"mine-basin"}`); code != 201 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	o = parseBench(t, sluiceOK(t, dir, "", env, "bench", "--endpoint", base, "--basin", "mine-basin", "--duration", "500ms", "--rate", "500", "--append-size", "5", "--json"))
	if o.Basin != "mine-basin" {
		t.Errorf("basin %q, want mine-basin", o.Basin)
	}
	if code, body := do("GET", "/v1/streams", "mine-basin", ""); code != 200 || strings.Contains(body, "bench-") {
		t.Errorf("streams of mine-basin after bench: %d %s: want none", code, body)
	}
	if code, body := do("GET", "/v1/basins", "x", ""); code != 200 || !strings.Contains(body, "mine-basin") {
		t.Errorf("basins after bench --basin: %d %s: want mine-basin kept", code, body)
	}

	r := sluice(t, dir, "", nil, "bench", "--endpoint", base, "--duration", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, "authn") {
		t.Errorf("bench without the token: exit %d, stderr %q: want exit 1 naming the refusal", r.code, r.stderr)
	}
}

// TestBenchFlagsReportEveryProblem: bad flags are all named in one error, before anything
// is written; flags of the other target are refused on the command line but ignored from
// a config file shared with other commands.
func TestBenchFlagsReportEveryProblem(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, dir, "", nil, "bench", "--store", "st", "--producers", "0", "--rate", "-5", "--record-size", "1048577", "--duration", "0s", "--append-size", "1001", "--auth-token", "x")
	if r.code != 1 {
		t.Fatalf("bench with bad flags: exit %d, want 1", r.code)
	}
	for _, want := range []string{"--producers", "--rate", "--record-size", "--duration", "--append-size", "--auth-token"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the error does not name %s: %s", want, r.stderr)
		}
	}
	if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("the error is not one line: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "st")); !os.IsNotExist(err) {
		t.Errorf("bench with bad flags created its store (%v)", err)
	}
	r = sluice(t, dir, "", nil, "bench", "--store", "st", "--endpoint", "http://127.0.0.1:1", "--flush-interval", "1ms")
	if r.code != 1 || !strings.Contains(r.stderr, "exclude each other") || !strings.Contains(r.stderr, "--flush-interval applies to --store only") {
		t.Errorf("--store with --endpoint and --flush-interval: exit %d, %s", r.code, r.stderr)
	}
	r = sluice(t, dir, "", nil, "bench", "--record-size", "2000", "--append-size", "1000")
	if r.code != 1 || !strings.Contains(r.stderr, "exceed") {
		t.Errorf("an append of 1000 records of 2000 bytes: exit %d, %s", r.code, r.stderr)
	}
	cfg := filepath.Join(dir, "shared.yaml")
	if err := os.WriteFile(cfg, []byte("store: "+filepath.Join(dir, "never")+"\nflush-interval: 5ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := startServe(t, dir, nil, "--store", filepath.Join(dir, "served"))
	parseBench(t, sluiceOK(t, dir, "", nil, "bench", "--config", cfg, "--endpoint", base, "--duration", "300ms", "--json"))
	if _, err := os.Stat(filepath.Join(dir, "never")); !os.IsNotExist(err) {
		t.Errorf("bench --endpoint opened the config file's store (%v)", err)
	}
}

// TestBenchHelpNamesItsFigures: --help documents the flags and the JSON keys the issue
// asks for.
func TestBenchHelpNamesItsFigures(t *testing.T) {
	help := sluiceOK(t, t.TempDir(), "", nil, "bench", "--help")
	for _, want := range []string{"--store", "--endpoint", "--producers", "--rate", "--record-size", "--duration", "--append-size", "--json", "--plot", "records_per_s", "ack_p50_ms", "ack_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "store_requests_per_gib"} {
		if !strings.Contains(help, want) {
			t.Errorf("bench --help does not mention %s", want)
		}
	}
}

// TestBenchSpreadsOverEndpoints: bench with two daemons of one store, comma-separated,
// sends appends to both (each answers some), and every record is read back.
func TestBenchSpreadsOverEndpoints(t *testing.T) {
	dir := t.TempDir()
	a := startServe(t, dir, nil, "--store", "./d")
	b := startServe(t, dir, nil, "--store", "./d")
	o := parseBench(t, sluiceOK(t, dir, "", nil, "bench", "--endpoint", a+","+b, "--duration", "1s", "--producers", "2", "--rate", "400", "--json"))
	if o.Records == 0 || o.E2ERecords != o.Records {
		t.Fatalf("%d records acked, %d read back: want all read", o.Records, o.E2ERecords)
	}
	appendRoute := regexp.MustCompile(`(?m)^sluice_api_requests_total\{[^}]*route="[^"]*records[^"]*"[^}]*status="200"[^}]*\} (\S+)$`)
	for _, base := range []string{a, b} {
		_, metrics := httpGet(t, base+"/metrics")
		if m := appendRoute.FindStringSubmatch(metrics); m == nil || m[1] == "0" {
			t.Errorf("daemon %s answered no append:\n%s", base, grepLines(metrics, "sluice_api_requests_total"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
