package watch_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/watch"
)

// committerSide is the process that commits a stream: its hub, told of every commit made
// through its publishing store, served over HTTP as a daemon serves it.
type committerSide struct {
	hub *watch.Hub
	srv *httptest.Server
	h   *manifest.Handle // commits through the publishing store
}

func serveWatch(t *testing.T, s *stream, mod func(*watch.Config)) *committerSide {
	t.Helper()
	hub := newHub(t, func(c *watch.Config) {
		c.MinInterval, c.MaxInterval = time.Hour, time.Hour // only publishes and first polls
		if mod != nil {
			mod(c)
		}
	})
	mux := http.NewServeMux()
	mux.Handle(watch.Path, hub.Handler(s.store))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return &committerSide{hub: hub, srv: srv, h: manifest.Open(watch.PublishingStore(s.store, hub), key)}
}

func (c *committerSide) commit(t *testing.T, n uint64) *manifest.Snapshot {
	t.Helper()
	snap, err := c.h.Update(context.Background(), func(st *manifest.State) error {
		st.Tail.SeqNum += n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// get asks the watch endpoint about the manifest at k of generation gen after a write
// counter: the answer, and its manifest decoded if it has one.
func (c *committerSide) get(t *testing.T, k, gen string, after uint64) (watch.Answer, *manifest.State) {
	t.Helper()
	res, err := http.Get(c.srv.URL + watch.Path + "?manifest=" + k + "&generation=" + gen + "&after=" + strconv.FormatUint(after, 10))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("answer %s: %s", res.Status, b)
	}
	var a watch.Answer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.Manifest == nil {
		return a, nil
	}
	st, err := manifest.Decode(k, a.Manifest)
	if err != nil {
		t.Fatalf("answer does not decode: %v", err)
	}
	return a, st
}

func genHex(st *manifest.State) string { return hex.EncodeToString(st.Generation[:]) }

// TestWatchEndpointWakesOnPublish: a watch request held at the current write counter is
// answered with the manifest a commit in the serving process wrote, which its hub learned
// by publish (its watcher polls only once an hour).
func TestWatchEndpointWakesOnPublish(t *testing.T) {
	s := newStream(t, objectstore.NewMemStore())
	c := serveWatch(t, s, nil)
	known := s.load().State
	type result struct {
		a  watch.Answer
		st *manifest.State
	}
	got := make(chan result, 1)
	go func() {
		a, st := c.get(t, key, genHex(known), known.WriteCounter)
		got <- result{a, st}
	}()
	written := c.commit(t, 3)
	r := <-got
	if r.st == nil || r.st.WriteCounter != written.State.WriteCounter || r.st.Tail.SeqNum != written.State.Tail.SeqNum || r.a.Version != written.Version {
		t.Fatalf("answer %+v (%+v), want the manifest written (write counter %d, tail %d, version %q)", r.a, r.st, written.State.WriteCounter, written.State.Tail.SeqNum, written.Version)
	}
}

// TestWatchEndpointUnchangedAfterHold: with nothing newer than the write counter asked
// about, the endpoint answers 204 after its hold.
func TestWatchEndpointUnchangedAfterHold(t *testing.T) {
	s := newStream(t, objectstore.NewMemStore())
	c := serveWatch(t, s, func(c *watch.Config) { c.ServeHold = 20 * time.Millisecond })
	known := s.load().State
	if a, _ := c.get(t, key, genHex(known), known.WriteCounter); !a.Unchanged || a.Manifest != nil || a.Error != "" {
		t.Fatalf("answer %+v for an unchanged stream, want unchanged", a)
	}
}

// TestWatchEndpointAnswersAnotherGenerationAtOnce: a follower that names another
// generation (the stream was deleted and created again) gets the current manifest at once,
// whatever write counter it names; it decides what to do with it.
func TestWatchEndpointAnswersAnotherGenerationAtOnce(t *testing.T) {
	s := newStream(t, objectstore.NewMemStore())
	c := serveWatch(t, s, nil) // a one-hour hold: an answer comes from the generation check
	known := s.load().State
	other := known.Generation
	other[0] ^= 1
	a, st := c.get(t, key, hex.EncodeToString(other[:]), known.WriteCounter+100)
	if st == nil || st.Generation != known.Generation || st.WriteCounter != known.WriteCounter {
		t.Fatalf("answer %+v (%+v), want the current manifest", a, st)
	}
}

// TestWatchEndpointRefusals: bad queries are 400, other methods 405; a missing stream is
// answered as missing.
func TestWatchEndpointRefusals(t *testing.T) {
	s := newStream(t, objectstore.NewMemStore())
	c := serveWatch(t, s, nil)
	gen := genHex(s.load().State)
	for _, tc := range []struct {
		name, query string
		want        int
	}{
		{"bad generation", "manifest=" + key + "&generation=xyz&after=1", http.StatusBadRequest},
		{"bad counter", "manifest=" + key + "&generation=" + gen + "&after=-1", http.StatusBadRequest},
		{"bad key", "manifest=&generation=" + gen + "&after=1", http.StatusBadRequest},
	} {
		res, err := http.Get(c.srv.URL + watch.Path + "?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
	}
	if a, _ := c.get(t, "streams/none/manifest", gen, 1); !a.Missing || a.Error == "" {
		t.Errorf("missing stream: answer %+v, want missing", a)
	}
	res, err := http.Post(c.srv.URL+watch.Path, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", res.StatusCode)
	}
}

// follower is a hub of another process: its own store handle (counted) on the same store.
func follower(t *testing.T, base objectstore.Store, mod func(*watch.Config)) (*watch.Hub, objectstore.Store, *counter) {
	t.Helper()
	fc := &counter{n: map[string]int{}}
	fs := objectstore.Instrument(base, fc)
	h := newHub(t, func(c *watch.Config) {
		c.Remote.Enabled = true
		c.MinInterval, c.MaxInterval, c.Remote.SafetyInterval = time.Hour, time.Hour, time.Hour
		if mod != nil {
			mod(c)
		}
	})
	return h, fs, fc
}

// TestRemoteFollowerSeesCommitsWithoutPolling: a follower in another process, whose
// manifest names the committer, is handed every commit by the committer's watch endpoint:
// its own store is never polled.
func TestRemoteFollowerSeesCommitsWithoutPolling(t *testing.T) {
	base := objectstore.NewMemStore()
	s := newStream(t, base)
	c := serveWatch(t, s, nil)
	// The committer takes the role, as a committer's write does.
	if _, err := c.h.Update(context.Background(), func(st *manifest.State) error {
		return st.TakeRole("c", c.srv.URL, time.Now(), time.Minute)
	}); err != nil {
		t.Fatal(err)
	}
	fh, fs, fc := follower(t, base, nil)
	known, err := manifest.Open(fs, key).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := fh.Subscribe(fs, key)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	before := fc.total()
	for i := range 20 {
		written := c.commit(t, uint64(i+1))
		for known.State.WriteCounter < written.State.WriteCounter {
			if known, err = sub.Wait(context.Background(), known); err != nil {
				t.Fatal(err)
			}
		}
		if known.State.Tail != written.State.Tail || known.Version != written.Version {
			t.Fatalf("follower holds tail %+v version %q, want the written %+v %q", known.State.Tail, known.Version, written.State.Tail, written.Version)
		}
	}
	if n := fc.total() - before; n != 0 {
		t.Fatalf("%d store requests by the follower of 20 watched commits, want 0", n)
	}
}

// TestBrokenWatchFallsBackToPolling: the committer goes away mid-stream (its server closed,
// connections cut); the follower polls the store instead and still sees every commit, in
// order, each once. Commits are random in size and in where they are made.
func TestBrokenWatchFallsBackToPolling(t *testing.T) {
	seed := testseed.Get(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	base := objectstore.NewMemStore()
	s := newStream(t, base)
	c := serveWatch(t, s, nil)
	fh, fs, fc := follower(t, base, func(cfg *watch.Config) {
		cfg.Remote.Committer.URL = c.srv.URL // configured: the manifest names none
		cfg.MinInterval, cfg.MaxInterval = time.Millisecond, 5*time.Millisecond
		cfg.Remote.RetryAfter = time.Hour
	})
	sub, err := fh.Subscribe(fs, key)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	known, err := manifest.Open(fs, key).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	commits := 30 + rng.IntN(30)
	cut := rng.IntN(commits)
	var want []uint64 // the tails written, in order
	done := make(chan []uint64)
	go func() {
		var seen []uint64
		k := known
		for len(seen) < commits {
			snap, err := sub.Wait(context.Background(), k)
			if err != nil {
				t.Error(err)
				break
			}
			// A follower may skip commits (it sees the latest), never repeat or go back.
			if snap.State.WriteCounter <= k.State.WriteCounter {
				t.Errorf("handed write counter %d after %d", snap.State.WriteCounter, k.State.WriteCounter)
			}
			k = snap
			seen = append(seen, snap.State.Tail.SeqNum)
			if snap.State.WriteCounter == known.State.WriteCounter+uint64(commits) {
				break
			}
		}
		done <- seen
	}()
	for i := range commits {
		if i == cut {
			c.srv.CloseClientConnections()
			c.srv.Close()
			c.hub.Close()
		}
		n := uint64(1 + rng.IntN(5))
		var w *manifest.Snapshot
		if i < cut {
			w = c.commit(t, n)
		} else {
			w = s.commit(n) // directly: no committer answers
		}
		want = append(want, w.State.Tail.SeqNum)
	}
	seen := <-done
	if len(seen) == 0 || seen[len(seen)-1] != want[len(want)-1] {
		t.Fatalf("follower saw tails %v, want to reach %d (commits %v, cut at %d)", seen, want[len(want)-1], want, cut)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("follower saw tails %v: not increasing", seen)
		}
	}
	if fc.get(string(objectstore.PurposePoll)+"/get") == 0 {
		t.Fatalf("the follower never polled the store after the watch broke")
	}
}
