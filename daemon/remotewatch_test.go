package daemon_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// purposes counts store requests by purpose.
type purposes struct {
	mu sync.Mutex
	n  map[objectstore.Purpose]int
}

func (p *purposes) ObserveOp(e objectstore.OpEvent) {
	p.mu.Lock()
	p.n[e.Purpose]++
	p.mu.Unlock()
}

func (p *purposes) get(k objectstore.Purpose) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[k]
}

func (p *purposes) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, v := range p.n {
		n += v
	}
	return n
}

// remoteFollower is a library follower of another process: its own store handle (counted)
// on the daemon's store, its own hub watching through the committer the manifest names.
type remoteFollower struct {
	hub   *watch.Hub
	store objectstore.Store
	c     *purposes
	sess  *consumer.Session
}

// followFromOtherProcess opens a following read of basin/name at its tail. remote false: the
// hub polls the store (the follower of before the watch endpoint).
func followFromOtherProcess(tb testing.TB, base objectstore.Store, basin, name string, remote bool, mod func(*watch.Config)) *remoteFollower {
	tb.Helper()
	c := &purposes{n: map[objectstore.Purpose]int{}}
	fs := objectstore.Instrument(base, c)
	wcfg := watch.DefaultConfig()
	wcfg.Remote.Enabled = remote
	if mod != nil {
		mod(&wcfg)
	}
	hub, err := watch.New(wcfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { hub.Close() })
	st := findStream(tb, fs, basin, name)
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore, cfg.Stream, cfg.Watch = fs, st, hub
	r, err := consumer.NewReader(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	sess, err := r.Open(context.Background(), consumer.ReadRequest{Start: consumer.AtTailOffset(0), Follow: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sess.Close() })
	return &remoteFollower{hub: hub, store: fs, c: c, sess: sess}
}

func findStream(tb testing.TB, s objectstore.Store, basin, name string) stream.Stream {
	tb.Helper()
	all, _, err := catalog.ListStreams(context.Background(), s, basin, name, "", 10)
	if err != nil {
		tb.Fatal(err)
	}
	for _, st := range all {
		if st.Name() == name {
			return st
		}
	}
	tb.Fatalf("stream %s/%s not found in %v", basin, name, all)
	return stream.Stream{}
}

// appendOne appends one record with body through the daemon's API.
func (r *running) appendOne(tb testing.TB, basin, name, body string) {
	tb.Helper()
	req, err := http.NewRequest("POST", r.base+"/v1/streams/"+name+"/records", strings.NewReader(`{"records":[{"body":"`+body+`"}]}`))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("S2-Basin", basin)
	req.Header.Set("Content-Type", "application/json")
	res, err := r.http.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		tb.Fatalf("append: %d", res.StatusCode)
	}
}

// createStream makes stream name in an existing basin through the daemon's API.
func (r *running) createStream(tb testing.TB, basin, name string) {
	tb.Helper()
	req, _ := http.NewRequest("POST", r.base+"/v1/streams", strings.NewReader(`{"stream":"`+name+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("S2-Basin", basin)
	res, err := r.http.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		tb.Fatalf("create stream %s: %d", name, res.StatusCode)
	}
}

// create makes basin/name through the daemon's API.
func (r *running) create(tb testing.TB, basin, name string) {
	tb.Helper()
	for _, c := range []struct{ path, b, body string }{
		{"/v1/basins", "", `{"basin":"` + basin + `"}`},
		{"/v1/streams", basin, `{"stream":"` + name + `"}`},
	} {
		req, _ := http.NewRequest("POST", r.base+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		if c.b != "" {
			req.Header.Set("S2-Basin", c.b)
		}
		res, err := r.http.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 201 {
			tb.Fatalf("create %s: %d", c.path, res.StatusCode)
		}
	}
}

// TestFollowerInAnotherProcessIsToldByTheCommitter: a library follower with its own store
// handle and hub follows a stream whose role the daemon holds: every record appended
// through the daemon arrives, in order, without the follower polling the store in between;
// with --journal too, where the daemon's answers carry its view with the journal folded in.
func TestFollowerInAnotherProcessIsToldByTheCommitter(t *testing.T) {
	for _, journal := range []bool{false, true} {
		t.Run(fmt.Sprintf("journal=%v", journal), func(t *testing.T) { followerIsToldByTheCommitter(t, journal) })
	}
}

func followerIsToldByTheCommitter(t *testing.T, journal bool) {
	base := objectstore.NewMemStore()
	cfg := testConfig(base)
	cfg.Journal = journal
	r := start(t, cfg)
	defer r.stop(t)
	r.create(t, "watch-basin", "events")
	r.appendOne(t, "watch-basin", "events", "first") // the daemon's committer takes the role
	f := followFromOtherProcess(t, base, "watch-basin", "events", true, func(c *watch.Config) {
		// No store poll could deliver a record within the test: only the watch can.
		c.MinInterval, c.MaxInterval, c.Remote.SafetyInterval = time.Hour, time.Hour, time.Hour
	})
	polls := f.c.get(objectstore.PurposePoll)
	for i := range 10 {
		body := fmt.Sprintf("rec-%d", i)
		r.appendOne(t, "watch-basin", "events", body)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		b, err := f.sess.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s not delivered: %v", body, err)
		}
		if len(b.Records) != 1 || string(b.Records[0].Body) != body {
			t.Fatalf("delivered %d records (%q...), want %q alone", len(b.Records), b.Records[0].Body, body)
		}
	}
	if n := f.c.get(objectstore.PurposePoll) - polls; n != 0 {
		t.Fatalf("%d manifest polls by the remote follower of 10 appends, want 0 (the watch tells it)", n)
	}
}

// TestWatchEndpointNeedsTheToken: with an auth token, the watch endpoint refuses requests
// without it and serves those with it.
func TestWatchEndpointNeedsTheToken(t *testing.T) {
	cfg := testConfig(objectstore.NewMemStore())
	cfg.AuthToken = "root-token"
	r := start(t, cfg)
	defer r.stop(t)
	for _, tc := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"wrong", http.StatusUnauthorized}, {"root-token", http.StatusBadRequest}} {
		req, _ := http.NewRequest("GET", r.base+watch.Path+"?manifest=x&generation=bad&after=0", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		res, err := r.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("token %q: %d, want %d", tc.token, res.StatusCode, tc.want)
		}
	}
}

// TestDaemonFollowsThroughTheRoleHolder: a daemon whose readers follow a stream that
// another daemon commits watches it through that daemon: asked for a change (its own watch
// endpoint, as a reader would wait), it gets it from the holder's watch.
func TestDaemonFollowsThroughTheRoleHolder(t *testing.T) {
	base := objectstore.NewMemStore()
	holder, other := start(t, testConfig(base)), start(t, testConfig(base))
	defer holder.stop(t)
	defer other.stop(t)
	holder.create(t, "watch-basin", "events")
	holder.appendOne(t, "watch-basin", "events", "first") // the holder takes the role
	key := findStream(t, base, "watch-basin", "events").ManifestKey()
	snap, err := manifest.Open(base, key).Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if snap.State.Committer.URL != holder.d.CommitterURL() {
		t.Fatalf("role %+v, want the holder's", snap.State.Committer)
	}
	got := make(chan *http.Response, 1)
	go func() {
		q := url.Values{"manifest": {key}, "generation": {hex.EncodeToString(snap.State.Generation[:])},
			"after": {strconv.FormatUint(snap.State.WriteCounter, 10)}}
		res, err := other.http.Get(other.base + watch.Path + "?" + q.Encode())
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	// Append once the other daemon watches the holder.
	for holder.metric(t, "sluice_watch_served_total") < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	holder.appendOne(t, "watch-basin", "events", "second")
	res := <-got
	if res == nil {
		return
	}
	defer res.Body.Close()
	var a watch.Answer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil || a.Manifest == nil {
		t.Fatalf("the other daemon answered %+v (%v), want the new manifest", a, err)
	}
	if n := other.metric(t, `sluice_watch_remote_answers_total{result="changed"}`); n < 1 {
		t.Fatalf("the other daemon had %v changed answers from the holder's watch, want it told by the holder", n)
	}
}

// metric is the value of the series named (with its labels) in the daemon's /metrics.
func (r *running) metric(t *testing.T, series string) float64 {
	t.Helper()
	code, body := r.do(t, "GET", "/metrics", "", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}
