package watch

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/manifest"
)

// errUnchanged: the watch endpoint held the request and saw nothing newer.
var errUnchanged = errors.New("watch: unchanged")

// remote is a hub's side of the remote watches: where to watch, and the HTTP requests.
type remote struct {
	cfg    RemoteConfig
	hold   time.Duration // the servers' hold we expect (our own ServeHold)
	client *http.Client
}

func newRemote(cfg RemoteConfig, hold time.Duration) *remote {
	c := cfg.Client
	if c == nil {
		c = &http.Client{}
	}
	return &remote{cfg: cfg, hold: hold, client: c}
}

// url is where to watch a stream whose manifest names role: as a writer would commit there
// (commitclient's route: the live role's committer, else the configured one), else the
// holder of a lapsed role; never Self. "" when there is none.
func (r *remote) url(role manifest.CommitterRole) string {
	cl, err := commitclient.New(commitclient.Config{URL: r.cfg.Committer.URL, Now: r.cfg.Committer.Now})
	if err != nil {
		return "" // Config.Validate checked the URL
	}
	cl.Observe(role)
	u := cl.URL()
	if u == "" {
		u = role.URL
	}
	if u == "" || (r.cfg.Self != "" && strings.TrimRight(u, "/") == strings.TrimRight(r.cfg.Self, "/")) {
		return ""
	}
	return u
}

// watch asks the endpoint at base for a manifest of key newer than st: the answer's
// snapshot, decoded and checked; errUnchanged after the server's hold; another error when
// the watch failed. accepted is called when the server has taken the watch (its headers).
func (r *remote) watch(ctx context.Context, base, key string, st *manifest.State, accepted func()) (*manifest.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, r.hold+r.cfg.RequestSlack)
	defer cancel()
	q := url.Values{"manifest": {key}, "generation": {hex.EncodeToString(st.Generation[:])},
		"after": {strconv.FormatUint(st.WriteCounter, 10)}, "tail": {strconv.FormatUint(st.Tail.SeqNum, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+Path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("watch: %s: %w", base, err)
	}
	if t := r.cfg.Committer.Token; t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	res, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("watch: %s: %w", base, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return nil, fmt.Errorf("watch: %s answered %s: %s", base, res.Status, strings.TrimSpace(string(msg)))
	}
	accepted()
	var a Answer
	if err := json.NewDecoder(io.LimitReader(res.Body, maxAnswerBytes)).Decode(&a); err != nil {
		return nil, fmt.Errorf("watch: %s: bad answer: %w", base, err)
	}
	switch {
	case a.Unchanged:
		return nil, errUnchanged
	case a.Error != "":
		return nil, fmt.Errorf("watch: %s: %s", base, a.Error)
	}
	got, err := manifest.Decode(key, a.Manifest)
	if err != nil {
		return nil, fmt.Errorf("watch: %s: bad answer: %w", base, err)
	}
	return &manifest.Snapshot{State: got, Version: a.Version}, nil
}

// maxAnswerBytes bounds an answer's body (a manifest is far smaller).
const maxAnswerBytes = 64 << 20

// watchRemote is the watcher's second goroutine while remote watches are enabled: it
// watches the stream through the committer its view names, adopting what the watch brings
// as a publish would be, and tells the poll loop whether a watch answers (remoteOK), which
// then polls only every SafetyInterval.
func (w *watcher) watchRemote() {
	defer w.h.wg.Done()
	r := w.h.remote
	for {
		w.mu.Lock()
		snap, verr, ch := w.snap, w.err, w.changed
		w.mu.Unlock()
		base := ""
		if snap != nil && verr == nil {
			base = r.url(snap.State.Committer)
		}
		if base == "" {
			w.setRemote(false)
			select { // until the view changes
			case <-ch:
				continue
			case <-w.quit:
				return
			}
		}
		// Answering once the server took the watch: one that fails (refused, reset, an error
		// answer) turns polling back on at once; a connection cut silently is noticed when
		// the request times out, meanwhile the store is polled every SafetyInterval.
		got, err := r.watch(w.ctx, base, w.key, snap.State, func() { w.setRemote(true) })
		if w.ctx.Err() != nil {
			return
		}
		switch {
		case errors.Is(err, errUnchanged):
			w.h.m.remote.WithLabelValues("unchanged").Inc()
		case err != nil:
			w.h.m.remote.WithLabelValues("error").Inc()
			level := slog.LevelDebug
			if w.setRemote(false) {
				level = slog.LevelInfo // a watch that answered broke: say so once
			}
			w.h.cfg.Logger.Log(w.ctx, level, "remote watch failed; polling the store", "key", w.key, "url", base, "err", err)
			t := time.NewTimer(r.cfg.RetryAfter)
			select {
			case <-t.C:
			case <-w.quit:
				t.Stop()
				return
			}
		default:
			w.h.m.remote.WithLabelValues("changed").Inc()
			w.adoptRemote(got)
		}
	}
}

// setRemote records whether a remote watch answers, and reports whether one did. When one
// stops answering, the store is polled at once: the followers must not wait for the safety
// interval.
func (w *watcher) setRemote(ok bool) bool {
	w.mu.Lock()
	was := w.remoteOK
	w.remoteOK = ok
	w.mu.Unlock()
	if was && !ok {
		w.h.m.remoteFallbacks.Inc()
		w.pokeNow()
	}
	return was
}

// adoptRemote takes a manifest a remote watch brought, as a publish: only if it is newer than
// the view (same generation, higher write counter); one of another generation makes the
// watcher poll the store to find out.
func (w *watcher) adoptRemote(snap *manifest.Snapshot) {
	if snap.State.Journal != nil {
		// The committer's view, its journal folded in as far as it saw: taken when it goes
		// further than ours (same generation, a later tail, no older manifest), else the
		// poll folds for itself.
		w.mu.Lock()
		cur := w.snap
		take := cur != nil && w.err == nil && snap.State.Generation == cur.State.Generation &&
			snap.State.WriteCounter >= cur.State.WriteCounter && snap.State.Tail.SeqNum > cur.State.Tail.SeqNum
		if take {
			w.snap, w.viewPoll, w.version = snap, 0, snap.Version
			w.h.m.wakes.WithLabelValues("remote").Inc()
			w.broadcastLocked()
		}
		w.mu.Unlock()
		if !take {
			w.pokeNow()
		}
		return
	}
	w.mu.Lock()
	taken := w.takeLocked(snap, "remote")
	poke := !taken && (w.snap == nil || w.err != nil || w.snap.State.Generation != snap.State.Generation)
	w.mu.Unlock()
	if poke {
		w.pokeNow()
	}
}
