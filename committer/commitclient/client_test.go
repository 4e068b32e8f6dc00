package commitclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

const path = "s/manifest"

// stream is a stream in a memory store, with consumer group "g" whose member is of epoch.
type stream struct {
	store objectstore.Store
	gen   [16]byte
	epoch uint64
}

// newStream creates one.
func newStream(t *testing.T) stream {
	t.Helper()
	ctx := context.Background()
	store := objectstore.NewMemStore()
	m := manifest.Open(store, path)
	if _, err := m.Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	snap, err := m.Update(ctx, func(st *manifest.State) error { st.OpenGroup("g"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return stream{store, snap.State.Generation, snap.State.Groups["g"].Epoch}
}

// serve runs a committer named id over store, served over HTTP until the test ends.
func serve(t *testing.T, store objectstore.Store, id string) *committer.Committer {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL = store, id, "http://"+srv.Listener.Addr().String()
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(committer.Path, c.Handler())
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		c.Close(context.Background())
	})
	return c
}

// batchRequest asks to commit producer p's batch num (one append of one record).
func (s stream) batchRequest(p string, num uint64) *wire.Request {
	in := &batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}}
	mb := &manifest.Batch{Key: "s/data/" + p + "-" + string(rune('0'+num)), BatchNum: num, Appends: []*batchfmt.AppendInput{in}}
	return &wire.Request{ManifestPath: path, Generation: wire.Generation(s.gen), ProducerID: p,
		Batches: []wire.Batch{wire.NewBatch(mb, nil, nil)}}
}

// checkpointRequest asks to move group g's checkpoint to seq.
func (s stream) checkpointRequest(seq uint64) *wire.Request {
	return &wire.Request{ManifestPath: path, Generation: wire.Generation(s.gen),
		Checkpoints: []wire.Checkpoint{{Group: "g", Epoch: s.epoch, SeqNum: seq}}}
}

func newClient(t *testing.T, cfg commitclient.Config) *commitclient.Client {
	t.Helper()
	cl, err := commitclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestRoleHeldRedirectIsFollowed: a writer configured with a committer that does not hold
// the stream's role is told who does, and its request is committed there, for a producer's
// batch and for a group's checkpoint alike; later requests go to the holder at once.
func TestRoleHeldRedirectIsFollowed(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"batch", "checkpoint"} {
		t.Run(kind, func(t *testing.T) {
			st := newStream(t)
			holder, other := serve(t, st.store, "holder"), serve(t, st.store, "other")
			// The holder takes the role with a first batch.
			if _, err := newClient(t, commitclient.Config{URL: holder.URL()}).Commit(ctx, st.batchRequest("p0", 1)); err != nil {
				t.Fatal(err)
			}
			cl := newClient(t, commitclient.Config{URL: other.URL()}) // knows only the other
			req := st.batchRequest("p1", 1)
			if kind == "checkpoint" {
				req = st.checkpointRequest(1)
			}
			resp, err := cl.Commit(ctx, req)
			if err != nil {
				t.Fatalf("commit through a committer without the role: %v, want it committed by the holder", err)
			}
			if resp.Role == nil || resp.Role.ID != "holder" {
				t.Fatalf("answered with role %+v, want the holder's", resp.Role)
			}
			if got := cl.URL(); got != holder.URL() {
				t.Fatalf("next request goes to %q, want the holder %q", got, holder.URL())
			}
			snap, err := manifest.Open(st.store, path).Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			switch kind {
			case "batch":
				if ps, ok := snap.State.Producer("p1"); !ok || ps.LastBatch != 1 || resp.Batches[0].Appends[0].Start.SeqNum != 1 {
					t.Fatalf("producer p1 in the manifest: %+v %v, answer %+v: want its batch committed at seq_num 1", ps, ok, resp.Batches)
				}
			case "checkpoint":
				if cp := snap.State.Groups["g"].Checkpoint; cp != 1 || resp.Checkpoints[0].Checkpoint != 1 {
					t.Fatalf("checkpoint %d in the manifest, answer %+v: want 1", cp, resp.Checkpoints)
				}
			}
		})
	}
}

// TestRouteJudgesTheRoleByTheInjectedClock: the role the manifest shows is live, or has
// lapsed, by Config.Now rather than the machine's clock.
func TestRouteJudgesTheRoleByTheInjectedClock(t *testing.T) {
	clk := &clock{now: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)} // long before the machine's
	const fallback = "http://fallback.invalid"
	cl := newClient(t, commitclient.Config{URL: fallback, Now: clk.Now})
	until := clk.Now().Add(time.Minute)
	cl.Observe(manifest.CommitterRole{ID: "c", URL: "http://role.invalid", UntilMs: uint64(until.UnixMilli())})
	if got := cl.URL(); got != "http://role.invalid" {
		t.Fatalf("route %q while the role is live by the injected clock, want the role's URL", got)
	}
	clk.add(time.Minute)
	if got := cl.URL(); got != fallback {
		t.Fatalf("route %q once the role lapsed by the injected clock, want the configured %q", got, fallback)
	}
	cl.Observe(manifest.CommitterRole{})
	if got := newClient(t, commitclient.Config{Now: clk.Now}).URL(); got != "" {
		t.Fatalf("route %q with no role and no configured committer, want direct", got)
	}
}

// TestFailureRoutesDirectForAWhile: after a committer failed a request, the writer commits
// directly for DirectFor (by its clock), Commit sending nothing meanwhile, then asks again.
func TestFailureRoutesDirectForAWhile(t *testing.T) {
	ctx := context.Background()
	st := newStream(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // nothing listens there
	clk := &clock{now: time.Now()}
	cl := newClient(t, commitclient.Config{URL: dead.URL, DirectFor: time.Minute, Now: clk.Now})
	_, err := cl.Commit(ctx, st.batchRequest("p", 1))
	var fail *commitclient.Error
	if !errors.As(err, &fail) || fail.Unknown || !errors.Is(err, commitclient.ErrUnreachable) || fail.URL != dead.URL {
		t.Fatalf("commit to a dead committer: %v, want an *Error, outcome known, unreachable at %s", err, dead.URL)
	}
	clk.add(time.Minute - time.Millisecond)
	if got := cl.URL(); got != "" {
		t.Fatalf("route %q within DirectFor of the failure, want direct", got)
	}
	if _, err := cl.Commit(ctx, st.batchRequest("p", 1)); !errors.Is(err, commitclient.ErrDirect) {
		t.Fatalf("commit within DirectFor: %v, want ErrDirect", err)
	}
	clk.add(time.Millisecond)
	if got := cl.URL(); got != dead.URL {
		t.Fatalf("route %q after DirectFor, want the committer %q again", got, dead.URL)
	}
}

// TestOutcomeOfFailures: a failure leaves the outcome unknown only when the request may
// have been committed: a lost answer, but neither an unreachable committer nor a refusal.
func TestOutcomeOfFailures(t *testing.T) {
	ctx := context.Background()
	st := newStream(t)
	c := serve(t, st.store, "c")
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "proxy failed after forwarding", http.StatusBadGateway)
	}))
	defer broken.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	stale := st
	stale.gen[0] ^= 1
	for _, tc := range []struct {
		name    string
		url     string
		req     *wire.Request
		unknown bool
		code    string
	}{
		{"unreachable", dead.URL, st.batchRequest("p", 1), false, ""},
		{"answer lost", broken.URL, st.batchRequest("p", 1), true, ""},
		{"refused", c.URL(), stale.batchRequest("p", 1), false, wire.CodeGeneration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newClient(t, commitclient.Config{URL: tc.url}).Commit(ctx, tc.req)
			if err == nil || commitclient.OutcomeUnknown(err) != tc.unknown {
				t.Fatalf("commit: %v, want a failure with outcome unknown %v", err, tc.unknown)
			}
			var refused *wire.Error
			if tc.code != "" && (!errors.As(err, &refused) || refused.Code != tc.code) {
				t.Fatalf("commit: %v, want the committer's %s", err, tc.code)
			}
		})
	}
}

// TestLocalCommitterTakesItsRequestsInProcess: requests for Config.Local's URL reach it
// without HTTP (nothing listens at its URL); every other goes through the transport.
func TestLocalCommitterTakesItsRequestsInProcess(t *testing.T) {
	ctx := context.Background()
	st := newStream(t)
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL = st.store, "local", "http://local.invalid"
	local, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close(ctx)
	cl := newClient(t, commitclient.Config{URL: cfg.URL + "/", Local: local})
	if _, err := cl.Commit(ctx, st.batchRequest("p", 1)); err != nil {
		t.Fatalf("commit to the local committer: %v", err)
	}
	snap, err := manifest.Open(st.store, path).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Committer.ID != "local" || snap.State.Tail.SeqNum != 1 {
		t.Fatalf("manifest role %+v tail %d: want the local committer's write", snap.State.Committer, snap.State.Tail.SeqNum)
	}
}
