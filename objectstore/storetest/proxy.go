package storetest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// ProxyAction tells a Proxy what to do with one request.
type ProxyAction int

const (
	// Forward passes the request and its answer through.
	Forward ProxyAction = iota
	// LoseAnswer forwards the request, lets the server apply it, and then cuts the
	// connection instead of answering: the client cannot know whether it took effect.
	LoseAnswer
	// Throttle answers for the server, without forwarding, with the status and body a
	// Proxy's Throttled function gives.
	Throttle
)

// Proxy is an HTTP proxy in front of a store's server (an emulator), for tests of answers a
// real server gives rarely: a lost answer to an applied write, a throttling refusal.
type Proxy struct {
	URL string // the proxy's base URL, http://127.0.0.1:port

	mu     sync.Mutex
	decide func(r *http.Request) ProxyAction
	seen   []string // method and path of every request
	srv    *httptest.Server
}

// NewProxy starts a proxy to upstream (a base URL), closed when t ends. Until SetDecide is
// called it forwards everything.
func NewProxy(t testing.TB, upstream string, throttled func(w http.ResponseWriter)) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("proxy upstream %q: %v", upstream, err)
	}
	// SetURL sends the upstream's Host: fake-gcs-server reads another host as a bucket.
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }}
	p := &Proxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.URL.Path)
		act := Forward
		if p.decide != nil {
			act = p.decide(r)
		}
		p.mu.Unlock()
		switch act {
		case Throttle:
			throttled(w)
		case LoseAnswer:
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			panic(http.ErrAbortHandler) // cut the connection without an answer
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	p.srv.Config.ErrorLog = nil
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

// SetDecide sets what the proxy does with each request from now on (nil: forward all).
func (p *Proxy) SetDecide(f func(r *http.Request) ProxyAction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.decide = f
}

// Seen returns the method and path of every request the proxy has had.
func (p *Proxy) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}
