package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	http  *http.Client // for calls, with a timeout
	// streaming is for read sessions, which last as long as they follow: no timeout but
	// the dial's and the response header's.
	streaming *http.Client
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
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Minute
	return &apiClient{
		base: base, token: token,
		http:      &http.Client{Timeout: time.Minute},
		streaming: &http.Client{Transport: tr},
	}, nil
}

// daemonError is a call the daemon answered with an error: Err is S2's error as
// s2api.DecodeErrorBody reads it (*s2api.Error, *s2api.SeqNumMismatchError, ...).
type daemonError struct {
	Method, Path string
	Status       int
	Err          error
}

func (e *daemonError) Error() string {
	var ae *s2api.Error
	if errors.As(e.Err, &ae) {
		hint := ""
		switch ae.Code {
		case s2api.CodeAuthn:
			hint = " (check --token or SLUICE_TOKEN)"
		case s2api.CodePermissionDenied:
			hint = " (the token's scope does not allow it)"
		}
		return fmt.Sprintf("the daemon refused %s %s: %d %s: %s%s", e.Method, e.Path, e.Status, ae.Code, ae.Message, hint)
	}
	return fmt.Sprintf("the daemon refused %s %s: %d: %v", e.Method, e.Path, e.Status, e.Err)
}

func (e *daemonError) Unwrap() error { return e.Err }

// daemonCode is the S2 error code of a daemon's refusal, or "".
func daemonCode(err error) s2api.Code {
	var ae *s2api.Error
	var de *daemonError
	if errors.As(err, &de) && errors.As(de.Err, &ae) {
		return ae.Code
	}
	return ""
}

// do sends the call with a JSON body (in, if non-nil) and decodes a 2xx JSON answer into
// out (if non-nil). Any other answer is a *daemonError.
func (c *apiClient) do(ctx context.Context, method, path string, in, out any) error {
	return c.call(ctx, method, path, nil, in, out)
}

// call is do with extra headers (S2-Basin, S2-Format).
func (c *apiClient) call(ctx context.Context, method, path string, hdr http.Header, in, out any) error {
	var body []byte
	if in != nil {
		if raw, ok := in.([]byte); ok {
			body = raw
		} else {
			b, err := json.Marshal(in)
			if err != nil {
				return err
			}
			body = b
		}
	}
	res, err := c.send(ctx, c.http, method, path, hdr, body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the daemon's answer to %s %s is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx response, whose body the caller closes; any other
// answer is a *daemonError.
func (c *apiClient) send(ctx context.Context, hc *http.Client, method, path string, hdr http.Header, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("calling the daemon at %s: %w", redactURL(c.base), err)
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the daemon's answer: %w", err)
	}
	return nil, &daemonError{Method: method, Path: path, Status: res.StatusCode, Err: s2api.DecodeErrorBody(res.StatusCode, b)}
}

// decodeJSONBody decodes a 2xx answer's JSON body into out.
func decodeJSONBody(res *http.Response, out any) error {
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the daemon's answer to %s %s is not the JSON expected: %w", res.Request.Method, res.Request.URL.Path, err)
	}
	return nil
}
