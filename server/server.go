package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/s2api"
)

// Defaults of the options.
const (
	DefaultMaxBodyBytes      = 8 << 20
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	// MaxHeartbeatInterval is the longest heartbeat interval allowed: the SDK gives up on an
	// S2S read session after 20 s without a batch, and on SSE after 25 s without an event.
	MaxHeartbeatInterval = 15 * time.Second
)

// Option configures a Server.
type Option func(*options)

type options struct {
	token        string
	tokenSet     bool
	maxBody      int64
	heartbeat    time.Duration
	writeTimeout time.Duration
	logger       *slog.Logger
	registerer   prometheus.Registerer
	now          func() time.Time
	access       *access.Authorizer
}

// WithBearerToken requires "Authorization: Bearer <token>" on every request (compared in
// constant time). The token must not be empty. Without this option no authentication is done.
func WithBearerToken(token string) Option {
	return func(o *options) { o.token, o.tokenSet = token, true }
}

// WithMaxBodyBytes bounds unary request bodies (default 8 MiB; must be at least 1 MiB).
func WithMaxBodyBytes(n int64) Option { return func(o *options) { o.maxBody = n } }

// WithHeartbeatInterval sets how often an idle read session sends a heartbeat (default 10 s;
// must be in (0, 15 s]).
func WithHeartbeatInterval(d time.Duration) Option { return func(o *options) { o.heartbeat = d } }

// WithWriteTimeout bounds each write to a session's client (default 30 s; must be > 0). A
// client that does not take a batch or ack within it is disconnected, so a stuck client holds
// at most one batch of the server's memory.
func WithWriteTimeout(d time.Duration) Option { return func(o *options) { o.writeTimeout = d } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRegisterer registers the server's metrics (default: none registered).
func WithRegisterer(r prometheus.Registerer) Option { return func(o *options) { o.registerer = r } }

// WithClock replaces time.Now (for ping timestamps).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Server is an http.Handler serving S2's REST API v1 over a Backend, under /v1 and at the root.
//
// Close cancels the open sessions and waits for their handlers to return.
type Server struct {
	b    Backend
	opts options
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool

	idem idempotency

	requests *prometheus.CounterVec
	sessions *prometheus.GaugeVec
	refusals *prometheus.CounterVec
}

// ErrClosed is returned by requests to a closed Server.
var ErrClosed = errors.New("server: closed")

// New returns a Server over b.
func New(b Backend, opts ...Option) (*Server, error) {
	o := options{
		maxBody:      DefaultMaxBodyBytes,
		heartbeat:    DefaultHeartbeatInterval,
		writeTimeout: DefaultWriteTimeout,
		logger:       slog.New(slog.DiscardHandler),
		now:          time.Now,
	}
	for _, opt := range opts {
		opt(&o)
	}
	var errs []error
	if b == nil {
		errs = append(errs, errors.New("server: backend is nil"))
	}
	if o.tokenSet && o.token == "" {
		errs = append(errs, errors.New("server: bearer token is empty"))
	}
	if o.tokenSet && o.access != nil {
		errs = append(errs, errors.New("server: both a bearer token and access tokens given (the authorizer holds the root token)"))
	}
	if o.maxBody < 1<<20 {
		errs = append(errs, fmt.Errorf("server: max body bytes %d is below 1 MiB", o.maxBody))
	}
	if o.heartbeat <= 0 || o.heartbeat > MaxHeartbeatInterval {
		errs = append(errs, fmt.Errorf("server: heartbeat interval %v is not in (0, %v]", o.heartbeat, MaxHeartbeatInterval))
	}
	if o.writeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("server: write timeout %v is not positive", o.writeTimeout))
	}
	if o.logger == nil {
		errs = append(errs, errors.New("server: logger is nil"))
	}
	if o.now == nil {
		errs = append(errs, errors.New("server: clock is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Server{b: b, opts: o, log: o.logger}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_api_requests_total", Help: "S2 API requests by route and HTTP status.",
	}, []string{"route", "status"})
	s.sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_api_open_sessions", Help: "Open S2 API sessions by kind (sse, s2s_read, s2s_append).",
	}, []string{"kind"})
	s.refusals = newRefusals()
	if o.registerer != nil {
		for _, c := range []prometheus.Collector{s.requests, s.sessions, s.refusals} {
			if err := o.registerer.Register(c); err != nil {
				return nil, fmt.Errorf("server: register metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Close cancels every open request and waits for their handlers to return.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// HTTPServer returns an *http.Server for addr that serves s over HTTP/1.1 and cleartext HTTP/2
// (prior knowledge) on the same port, as S2's Node SDK needs for its S2S sessions.
func (s *Server) HTTPServer(addr string) *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &http.Server{
		Addr:              addr,
		Handler:           s,
		Protocols:         &p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// statusWriter records the status for metrics, and the error writeError sent for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
	err    error
	// ended, if set, gives the error to send instead of a cancellation that ended the call
	// (a revoked or expired token's refusal).
	ended func() error
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// request is the parsed route of one call.
type request struct {
	w      http.ResponseWriter
	r      *http.Request
	ctx    context.Context
	basin  string
	name   string // basin or stream named in the path
	group  string // consumer group named in the path (groups.go)
	route  string
	format s2api.Format
	// The caller (the root for a server without WithAccess) and its bearer token.
	principal *access.Principal
	bearer    string
}

// ServeHTTP serves one API call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		err := &s2api.Error{Code: s2api.CodeUnavailable, Message: "server is shutting down", Err: ErrClosed}
		writeError(w, err)
		s.logFailure(r, "unknown", err)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()

	sw := &statusWriter{ResponseWriter: w}
	req := &request{w: sw, r: r, ctx: ctx, route: "unknown"}
	defer func() {
		st := sw.status
		if st == 0 {
			st = http.StatusOK
		}
		s.requests.WithLabelValues(req.route, strconv.Itoa(st)).Inc()
		if st >= 500 && sw.err != nil {
			s.logFailure(r, req.route, sw.err)
		}
	}()

	// Unary calls get whole-request deadlines (a long poll may wait up to MaxWaitSecs); the
	// session handlers clear them and bound each write instead.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.writeTimeout))
	_ = rc.SetWriteDeadline(time.Now().Add(s.opts.writeTimeout + s2api.MaxWaitSecs*time.Second))

	if !s.authenticate(req) {
		return
	}
	defer s.guard(req)()
	sw.ended = func() error { return s.endedByAccess(req) }
	s.dispatch(req)
}

// Protect wraps h with the server's bearer-token check (WithBearerToken, or WithAccess's
// root token: issued tokens are refused), for routes the owner serves beside the API, such
// as the committer's.
func (s *Server) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (s.opts.tokenSet && !s.authorized(r)) || (s.opts.access != nil && !s.opts.access.IsRoot(bearer(r))) {
			writeError(w, &s2api.Error{Code: s2api.CodeAuthn, Message: "missing or invalid bearer token"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := []byte(strings.TrimSpace(h[len(prefix):]))
	return subtle.ConstantTimeCompare(got, []byte(s.opts.token)) == 1
}

// writeJSON sends v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, fmt.Errorf("server: encode response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError sends err as S2 does (see s2api.ErrorResponse). ServeHTTP logs it if it is a
// 5xx (see logFailure).
func writeError(w http.ResponseWriter, err error) {
	sw, _ := w.(*statusWriter)
	if sw != nil && sw.ended != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		if e := sw.ended(); e != nil {
			err = e
		}
	}
	status, body := s2api.ErrorResponse(err)
	if sw != nil {
		sw.err = err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// readBody reads a unary body of at most the configured size.
func (s *Server) readBody(q *request) ([]byte, error) {
	body := http.MaxBytesReader(q.w, q.r.Body, s.opts.maxBody)
	b, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, s2api.Errorf(s2api.CodeRequestTooLarge, "request body exceeds %d bytes", s.opts.maxBody)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The client sent its body too slowly (the read deadline): a timeout, which
			// clients retry, not a malformed body.
			return nil, &s2api.Error{Code: s2api.CodeRequestTimeout, Message: "request body not received in time", Err: err}
		}
		return nil, &s2api.Error{Code: s2api.CodeBadJSON, Message: "reading request body failed", Err: err}
	}
	// The body is in: the read deadline has done its work, and left set it would cancel a
	// call that takes longer (an append waiting for a slow store) on HTTP/1.1.
	_ = http.NewResponseController(q.w).SetReadDeadline(time.Time{})
	return b, nil
}

// decodeJSON parses a JSON body into v (an empty body leaves v as it is).
func decodeJSON(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return s2api.BadJSON("request body", err)
	}
	return nil
}

// logFailure logs a 5xx answer with its cause, which its body hides from the client (a
// storage error's keys, bucket and request ids): at Error for a 500, at Warn for the others
// (503 unavailable, 504 timeouts). Errors that are not 5xx are the client's and are not logged.
// Every 5xx is logged once: unary answers by ServeHTTP, sessions' error frames and events
// where they are sent.
func (s *Server) logFailure(r *http.Request, route string, err error) {
	status, _ := s2api.ErrorResponse(err)
	if status < 500 {
		return
	}
	level := slog.LevelWarn
	if status == http.StatusInternalServerError {
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "request failed", "method", r.Method, "route", route,
		"status", status, "err", err)
}
