package committer

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/sluice-dev/sluice/committer/wire"
)

// Path is where the committer's Handler is served, under its URL (wire.Path).
const Path = wire.Path

// Handler serves Commit at Path: POST a JSON wire.Request, get a JSON wire.Response (200
// also for a request that was not committed: the answer's Error says why).
func (c *Committer) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "commit requests are POSTed", http.StatusMethodNotAllowed)
			return
		}
		c.m.requests.Inc()
		var req wire.Request
		dec := json.NewDecoder(io.LimitReader(r.Body, wire.MaxBodyBytes))
		var resp *wire.Response
		if err := dec.Decode(&req); err != nil {
			resp = &wire.Response{Error: &wire.Error{Code: wire.CodeBadRequest, Message: "not a commit request: " + err.Error()}}
		} else {
			resp = c.Commit(r.Context(), &req)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	})
}
