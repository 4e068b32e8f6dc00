package commitclient

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

	"github.com/sluice-dev/sluice/committer/wire"
)

// HTTP is the Transport that POSTs requests as JSON to url + wire.Path.
type HTTP struct {
	Client *http.Client // default http.DefaultClient
	Token  string       // bearer token, if the committer's API needs one
}

// Commit sends req to the committer at url. An error means no answer: it matches
// ErrUnreachable when the request was surely not received; otherwise it may have been
// committed.
func (h *HTTP) Commit(ctx context.Context, url string, req *wire.Request) (*wire.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(url, "/")+wire.Path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if h.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+h.Token)
	}
	hc := h.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(hr)
	if err != nil {
		if isDialError(err) {
			return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
		return nil, fmt.Errorf("commitclient: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		err := fmt.Errorf("commitclient: %s answered %s: %s", url, res.Status, bytes.TrimSpace(msg))
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed {
			err = fmt.Errorf("%w: %w", ErrUnreachable, err) // refused before the committer saw it
		}
		return nil, err
	}
	var out wire.Response
	if err := json.NewDecoder(io.LimitReader(res.Body, wire.MaxBodyBytes)).Decode(&out); err != nil {
		return nil, fmt.Errorf("commitclient: %s: bad answer: %w", url, err)
	}
	return &out, nil
}

// isDialError reports whether err happened before the request was sent (no connection).
func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}
