package watch

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Path is where a daemon serves its hub's watch endpoint (Handler), under the URL it
// advertises as a committer.
const Path = "/sluice/v1/watch"

// Answer is the body of the watch endpoint's 200 answer, whose headers are sent as soon as
// the watch is accepted (so that the follower knows it is watched): a manifest newer than
// the one asked about, as durably written (its store version and its bytes); or Unchanged
// after the hold; or Error (Missing: the stream does not exist or was deleted).
type Answer struct {
	Version   string `json:"version,omitempty"`
	Manifest  []byte `json:"manifest,omitempty"` // manifest.State.Encode; base64 in JSON
	Unchanged bool   `json:"unchanged,omitempty"`
	Missing   bool   `json:"missing,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Handler serves the hub's view of the streams of store at Path to followers in other
// processes: GET ?manifest=KEY&generation=HEX&after=WRITE_COUNTER[&tail=SEQ_NUM] subscribes
// to the stream, sends 200's headers at once, and answers (an Answer), as soon as the hub
// holds a manifest of another generation or of a higher write counter, or, for a stream with
// a journal, a view whose tail passed tail (its windows folded in: package manifest's
// FoldJournal), with it; after Config.ServeHold with nothing newer, Unchanged. A bad query is
// 400 (nothing is held).
// The subscription outlives the request by Config.ServeLinger, so that a follower's next
// request finds the stream's watcher holding its view.
// A missing or deleted stream, or another read failure, is an Answer's Error. Only
// manifests the hub holds are sent: polled from the store, or published by this process after
// its write succeeded; never one a remote subscriber brought. The caller protects it (the
// committers' bearer token).
func (h *Hub) Handler(store objectstore.Store) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			rw.Header().Set("Allow", http.MethodGet)
			http.Error(rw, "watch requests are GETs", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		key := q.Get("manifest")
		gen, err := parseGeneration(q.Get("generation"))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		after, err := strconv.ParseUint(q.Get("after"), 10, 64)
		if err != nil {
			http.Error(rw, "after: not a write counter", http.StatusBadRequest)
			return
		}
		tail := uint64(math.MaxUint64) // without tail=, only manifest writes answer
		if t := q.Get("tail"); t != "" {
			if tail, err = strconv.ParseUint(t, 10, 64); err != nil {
				http.Error(rw, "tail: not a seq_num", http.StatusBadRequest)
				return
			}
		}
		sub, err := h.Subscribe(store, key)
		switch {
		case errors.Is(err, ErrClosed):
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		case err != nil:
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		defer func() {
			if h.cfg.ServeLinger == 0 {
				sub.Close()
				return
			}
			// Kept a while for the follower's next request (Close after Hub.Close is
			// allowed; the timer holds no goroutine until it fires).
			time.AfterFunc(h.cfg.ServeLinger, func() { sub.Close() })
		}()
		h.m.served.Inc()
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusOK)
		if f, ok := rw.(http.Flusher); ok {
			f.Flush() // the follower knows it is watched
		}
		answer := func(a Answer) { _ = json.NewEncoder(rw).Encode(a) }
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.ServeHold)
		defer cancel()
		// known is always the hub's own view, never what the request claims: a subscriber
		// may hand the watcher a later manifest, which a remote one must not.
		var known *manifest.Snapshot
		for {
			snap, err := sub.Wait(ctx, known)
			switch {
			case err != nil && ctx.Err() != nil:
				answer(Answer{Unchanged: true})
				return
			case err != nil:
				answer(Answer{Error: err.Error(), Missing: errors.Is(err, manifest.ErrNotExist)})
				return
			}
			if snap.State.Generation != gen || snap.State.WriteCounter > after ||
				(snap.State.Journal != nil && snap.State.Tail.SeqNum > tail) {
				// A journal'd stream's view moves with its windows, not only its manifest
				// writes: the hub's view is sent folded.
				answer(Answer{Version: snap.Version, Manifest: snap.State.Encode()})
				return
			}
			known = snap
		}
	})
}

func parseGeneration(s string) ([16]byte, error) {
	var g [16]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(g) {
		return g, errors.New("generation: not 32 hex digits")
	}
	copy(g[:], b)
	return g, nil
}
