package committer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/manifest"
)

// maxRequestBytes bounds a commit request's body: 256 batches of 1000 appends' metadata
// stay well below it.
const maxRequestBytes = 64 << 20

// Handler serves Commit at Path: POST a JSON Request, get a JSON Response (200 also for a
// request that was not committed: the answer's Error says why).
func (c *Committer) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "commit requests are POSTed", http.StatusMethodNotAllowed)
			return
		}
		c.m.requests.Inc()
		var req Request
		dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
		var resp *Response
		if err := dec.Decode(&req); err != nil {
			resp = &Response{Error: &Error{Code: CodeBadRequest, Message: "not a commit request: " + err.Error()}}
		} else {
			resp = c.Commit(r.Context(), &req)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	})
}

// Writers' timings: a request waits RequestTimeout for its answer; a writer whose committer
// failed it writes directly for DirectFor before it asks again.
const (
	RequestTimeout = 10 * time.Second
	DirectFor      = 10 * time.Second
)

// URL is where a writer sends its next request: the stream's role while it is live at now,
// else fallback (a configured committer; "" for none).
func URL(role manifest.CommitterRole, fallback string, now time.Time) string {
	if role.URL != "" && role.Live(now) {
		return role.URL
	}
	return fallback
}

// ErrUnreachable: the request did not reach the committer (nothing of it was committed).
var ErrUnreachable = errors.New("committer: unreachable")

// Caller sends a commit request to the committer at url. Client is the HTTP one; a program
// may give its producers and consumers another (one that calls a Committer in the same
// process, or a simulated network).
type Caller interface {
	Commit(ctx context.Context, url string, req *Request) (*Response, error)
}

// Client sends commit requests to committers over HTTP.
type Client struct {
	HTTP  *http.Client // default http.DefaultClient
	Token string       // bearer token, if the committer's API needs one
}

// Commit sends req to the committer at url. An error means no answer: it matches
// ErrUnreachable when the request was surely not received; otherwise it may have been
// committed.
func (cl *Client) Commit(ctx context.Context, url string, req *Request) (*Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+Path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if cl.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+cl.Token)
	}
	hc := cl.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(hr)
	if err != nil {
		if isDialError(err) {
			return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
		return nil, fmt.Errorf("committer: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		err := fmt.Errorf("committer: %s answered %s: %s", url, res.Status, bytes.TrimSpace(msg))
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed {
			err = fmt.Errorf("%w: %w", ErrUnreachable, err) // refused before the committer saw it
		}
		return nil, err
	}
	var out Response
	if err := json.NewDecoder(io.LimitReader(res.Body, maxRequestBytes)).Decode(&out); err != nil {
		return nil, fmt.Errorf("committer: %s: bad answer: %w", url, err)
	}
	return &out, nil
}

// isDialError reports whether err happened before the request was sent (no connection).
func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}
