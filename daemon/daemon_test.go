package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/daemon"
	"github.com/sluice-dev/sluice/internal/testlog"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/stream"
)

// testConfig is a daemon on store at a free port of 127.0.0.1.
func testConfig(store objectstore.Store) daemon.Config {
	cfg := daemon.DefaultConfig()
	cfg.Store = store
	cfg.Listen = "127.0.0.1:0"
	return cfg
}

// running is a daemon serving in the background, with the channel of Run's result.
type running struct {
	d    *daemon.Daemon
	base string // http://127.0.0.1:port
	ran  chan error
	http *http.Client
}

// start runs a daemon of cfg in process until the test closes it with stop.
func start(t testing.TB, cfg daemon.Config, opts ...daemon.Option) *running {
	t.Helper()
	d, err := daemon.New(t.Context(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{d: d, base: "http://" + d.Addr().String(), ran: make(chan error, 1), http: &http.Client{Transport: &http.Transport{}}}
	go func() { r.ran <- d.Run(context.Background()) }()
	return r
}

// stop closes the daemon, checks Run returned nil, and drops the client's connections.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if err := r.d.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-r.ran; err != nil {
		t.Errorf("Run: %v", err)
	}
	r.http.CloseIdleConnections()
}

// do sends one API call with the S2-Basin header basin.
func (r *running) do(t *testing.T, method, path, basin, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, r.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if basin != "" {
		req.Header.Set("S2-Basin", basin)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := r.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// appendAndRead creates basin/stream, appends n records with random bodies in one call, and
// checks that a read returns them in order; it returns the bodies.
func appendAndRead(t *testing.T, r *running, basin, stream string, rng *rand.Rand, n int) []string {
	t.Helper()
	if code, body := r.do(t, "POST", "/v1/basins", "", `{"basin":"`+basin+`"}`); code != 201 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	if code, body := r.do(t, "POST", "/v1/streams", basin, `{"stream":"`+stream+`"}`); code != 201 {
		t.Fatalf("create stream: %d %s", code, body)
	}
	bodies := make([]string, n)
	recs := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("rec-%d-%x", i, rng.Uint64())
		recs[i] = `{"body":"` + bodies[i] + `"}`
	}
	if code, body := r.do(t, "POST", "/v1/streams/"+stream+"/records", basin, `{"records":[`+strings.Join(recs, ",")+`]}`); code != 200 || !strings.Contains(body, fmt.Sprintf(`"end":{"seq_num":%d`, n)) {
		t.Fatalf("append: %d %s", code, body)
	}
	checkRead(t, r, basin, stream, bodies)
	return bodies
}

// checkRead reads stream from seq_num 0 and checks that it holds exactly bodies, in order.
func checkRead(t *testing.T, r *running, basin, stream string, bodies []string) {
	t.Helper()
	code, body := r.do(t, "GET", fmt.Sprintf("/v1/streams/%s/records?seq_num=0&count=%d", stream, len(bodies)+1), basin, "")
	if code != 200 {
		t.Fatalf("read: %d %s", code, body)
	}
	at := 0
	for i, b := range bodies {
		j := strings.Index(body[at:], `"body":"`+b+`"`)
		if j < 0 {
			t.Fatalf("read: record %d (%s) missing or out of order in %s", i, b, body)
		}
		at += j + 1
	}
	if strings.Count(body, `"seq_num"`) != len(bodies)+1 { // each record, and the tail
		t.Fatalf("read: want %d records in %s", len(bodies), body)
	}
}

// TestDaemonServesOnMemoryStore: a daemon started in process on the memory store, at a port
// it picked, takes an append and serves it back through S2's API, answers /health and
// /metrics (the object store's and the producers' families on the injected registry's
// default), and closes with nothing of it left running.
func TestDaemonServesOnMemoryStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	defer checkNoLeaks(t)()
	r := start(t, testConfig(objectstore.NewMemStore()))
	appendAndRead(t, r, "mem-basin", "events", rng, 1+rng.IntN(50))
	if code, body := r.do(t, "GET", "/health", "", ""); code != 200 || body != "ok\n" {
		t.Errorf("/health: %d %q", code, body)
	}
	code, metrics := r.do(t, "GET", "/metrics", "", "")
	for _, want := range []string{"sluice_objectstore_operations_total", "sluice_producer_appends_total", "sluice_committer_"} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (%d) has no %s", code, want)
		}
	}
	r.stop(t)
}

// TestDaemonKeepsRecordsInADirectory: records appended through a daemon on a directory are
// read back through a second daemon started on it after the first closed.
func TestDaemonKeepsRecordsInADirectory(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	defer checkNoLeaks(t)()
	dir := t.TempDir()
	store, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r := start(t, testConfig(store))
	bodies := appendAndRead(t, r, "dir-basin", "events", rng, 1+rng.IntN(50))
	r.stop(t)

	again, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	r = start(t, testConfig(again))
	checkRead(t, r, "dir-basin", "events", bodies)
	r.stop(t)
}

// TestCloseWithoutRunStopsEverything: a daemon closed without ever serving stops what New
// started (committer, engine, collector, listener); Run after Close is ErrClosed.
func TestCloseWithoutRunStopsEverything(t *testing.T) {
	defer checkNoLeaks(t)()
	d, err := daemon.New(t.Context(), testConfig(objectstore.NewMemStore()))
	if err != nil {
		t.Fatal(err)
	}
	addr := d.Addr().String()
	if err := d.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := d.Run(context.Background()); !errors.Is(err, daemon.ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("the daemon's address %s is still taken after Close: %v", addr, err)
	} else {
		ln.Close()
	}
}

// TestRunEndsWithItsContext: Run shuts down and returns nil when its ctx ends; a second Run
// is ErrClosed, and Close afterwards returns at once with Run's result.
func TestRunEndsWithItsContext(t *testing.T) {
	defer checkNoLeaks(t)()
	var logs testlog.Buffer
	d, err := daemon.New(t.Context(), testConfig(objectstore.NewMemStore()), daemon.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := d.Run(context.Background()); !errors.Is(err, daemon.ErrClosed) {
		t.Errorf("second Run = %v, want ErrClosed", err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
	if !strings.Contains(logs.String(), "serving as committer") {
		t.Errorf("the injected logger has no committer line:\n%s", logs.String())
	}
}

// TestNewReportsEveryProblem: a zero Config and nil options are refused with every problem
// named at once, each matching ErrInvalidConfig.
func TestNewReportsEveryProblem(t *testing.T) {
	_, err := daemon.New(t.Context(), daemon.Config{AdvertiseURL: "ftp://x"}, daemon.WithLogger(nil), daemon.WithMetrics(nil, nil))
	if !errors.Is(err, daemon.ErrInvalidConfig) {
		t.Fatalf("New(zero Config) = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"Store is nil", "Listen is empty", "MaxBodyBytes", "ShutdownTimeout", "FlushInterval", "GCGracePeriod", "AdvertiseURL is set without Committer", "not an http or https URL", "logger is nil", "registerer is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %q:\n%v", want, err)
		}
	}
	cfg := testConfig(objectstore.NewMemStore())
	cfg.GCInterval = 0
	if _, err := daemon.New(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "GCInterval") {
		t.Errorf("GCInterval 0 with GC: %v, want it refused", err)
	}
	cfg.GC = false
	d, err := daemon.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("GCInterval 0 without GC: %v", err)
	}
	d.Close(context.Background())
}

// TestZeroDaemonIsRefused: a Daemon that New did not make is refused, not a nil dereference.
func TestZeroDaemonIsRefused(t *testing.T) {
	var d daemon.Daemon
	if err := d.Run(context.Background()); !errors.Is(err, daemon.ErrNotNew) {
		t.Errorf("Run = %v, want ErrNotNew", err)
	}
	if err := d.Close(context.Background()); !errors.Is(err, daemon.ErrNotNew) {
		t.Errorf("Close = %v, want ErrNotNew", err)
	}
}

// TestListenFailureIsAListenError: an address in use is a *ListenError naming it, and New
// leaves nothing running.
func TestListenFailureIsAListenError(t *testing.T) {
	defer checkNoLeaks(t)()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := testConfig(objectstore.NewMemStore())
	cfg.Listen = ln.Addr().String()
	_, err = daemon.New(t.Context(), cfg)
	var le *daemon.ListenError
	if !errors.As(err, &le) || le.Addr != cfg.Listen {
		t.Fatalf("New on a taken address = %v, want a *ListenError for %s", err, cfg.Listen)
	}
}

// TestCloseCutsAStuckShutdownShort: a live read session keeps the daemon busy; Close with a
// context that has already ended still returns, and leaves nothing running.
func TestCloseCutsAStuckShutdownShort(t *testing.T) {
	defer checkNoLeaks(t)()
	cfg := testConfig(objectstore.NewMemStore())
	cfg.ShutdownTimeout = time.Hour
	r := start(t, cfg)
	if code, body := r.do(t, "POST", "/v1/basins", "", `{"basin":"live-basin"}`); code != 201 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	if code, body := r.do(t, "POST", "/v1/streams", "live-basin", `{"stream":"s"}`); code != 201 {
		t.Fatalf("create stream: %d %s", code, body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", r.base+"/v1/streams/s/records?seq_num=0", nil)
	req.Header.Set("S2-Basin", "live-basin")
	req.Header.Set("Accept", "text/event-stream")
	res, err := r.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() { defer close(drained); _, _ = io.Copy(io.Discard, res.Body) }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.d.Close(ctx) // cut short: its error may say so
	<-r.ran
	<-drained
	res.Body.Close()
	r.http.CloseIdleConnections()
}

// TestCommitterLeaseIsTheRoleLength: Config.CommitterLease is how long each committer
// write holds the stream's role (the manifest's role lapses that long after the write); a
// lease that is not positive, or not below the committer's idle timeout, is refused, and
// without a committer the lease is not checked.
func TestCommitterLeaseIsTheRoleLength(t *testing.T) {
	for _, lease := range []time.Duration{0, -time.Second, time.Minute, time.Hour} {
		cfg := testConfig(objectstore.NewMemStore())
		cfg.CommitterLease = lease
		if _, err := daemon.New(t.Context(), cfg); !errors.Is(err, daemon.ErrInvalidConfig) || !strings.Contains(err.Error(), "CommitterLease") {
			t.Errorf("CommitterLease %v: %v, want it refused naming CommitterLease", lease, err)
		}
		cfg.Committer = false
		d, err := daemon.New(t.Context(), cfg)
		if err != nil {
			t.Errorf("CommitterLease %v without a committer: %v", lease, err)
			continue
		}
		d.Close(context.Background())
	}
	store := objectstore.NewMemStore()
	cfg := testConfig(store)
	cfg.CommitterLease = 2345 * time.Millisecond
	r := start(t, cfg)
	defer r.stop(t)
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	before := time.Now()
	appendAndRead(t, r, "lease-basin", "events", rng, 3)
	after := time.Now()
	st, err := stream.Locate("lease-basin", "events")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := manifest.Open(store, st.ManifestKey()).Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	role := snap.State.Committer
	lo, hi := uint64(before.Add(cfg.CommitterLease).UnixMilli()), uint64(after.Add(cfg.CommitterLease).UnixMilli())
	if role.URL != r.d.CommitterURL() || role.UntilMs < lo || role.UntilMs > hi {
		t.Errorf("role after an append: %+v; want %s until %d..%d (the write's time plus the lease)", role, r.d.CommitterURL(), lo, hi)
	}
}
