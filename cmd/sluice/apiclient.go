package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/s2api"
)

// apiClient calls a daemon's S2 API (--endpoint, --token).
type apiClient struct {
	base  string // the endpoint with its /v1
	token string
	http  *http.Client
}

func newAPIClient(endpoint, token string) (*apiClient, error) {
	if endpoint == "" {
		return nil, fmt.Errorf("--endpoint (or SLUICE_ENDPOINT) is required: the daemon's URL, e.g. http://127.0.0.1:8080")
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid value %q for --endpoint: want http://host:port or https://host:port", endpoint)
	}
	base := strings.TrimSuffix(endpoint, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return &apiClient{base: base, token: token, http: &http.Client{Timeout: time.Minute}}, nil
}

// do sends the call and decodes a 2xx JSON answer into out (if non-nil). Any other answer is
// an error naming the daemon's code and message.
func (c *apiClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("calling the daemon at %s: %w", redactURL(c.base), err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if res.StatusCode/100 != 2 {
		var e struct{ Code, Message string }
		if json.Unmarshal(b, &e) == nil && e.Code != "" {
			hint := ""
			switch s2api.Code(e.Code) {
			case s2api.CodeAuthn:
				hint = " (check --token or SLUICE_TOKEN)"
			case s2api.CodePermissionDenied:
				hint = " (the token's scope does not allow it)"
			}
			return fmt.Errorf("the daemon refused %s %s: %d %s: %s%s", method, path, res.StatusCode, e.Code, e.Message, hint)
		}
		return fmt.Errorf("the daemon answered %s %s with %s", method, path, res.Status)
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the daemon's answer to %s %s is not the JSON expected: %w", method, path, err)
	}
	return nil
}
