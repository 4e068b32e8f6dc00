package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
)

// WithAccess authenticates every call with a: its root token, or a token issued into its
// store, whose scope must grant the call's operation on the call's basin, stream and token
// id (see package access). It serves S2's /access-tokens routes. It replaces
// WithBearerToken, which grants its one token everything.
func WithAccess(a *access.Authorizer) Option { return func(o *options) { o.access = a } }

func newRefusals() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_api_access_refusals_total",
		Help: "S2 API calls refused by authentication or a token's scope, by reason (no_token, unknown_token, revoked, expired, operation, resource, escalation).",
	}, []string{"reason"})
	for _, r := range access.Reasons {
		c.WithLabelValues(string(r))
	}
	return c
}

// bearer returns the token of an "Authorization: Bearer <token>" header, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(h[len(prefix):])
}

// accessError turns an error of package access into S2's error, and counts a refusal.
func (s *Server) accessError(err error) error {
	var re *access.RefusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		s.refusals.WithLabelValues(string(re.Reason)).Inc()
		code := s2api.CodePermissionDenied
		if errors.Is(err, access.ErrUnauthenticated) {
			code = s2api.CodeAuthn
		}
		return &s2api.Error{Code: code, Message: re.Msg, Err: err}
	case errors.Is(err, access.ErrInvalidScope):
		return &s2api.Error{Code: s2api.CodeInvalid, Message: strings.TrimPrefix(err.Error(), "access: "), Err: err}
	case errors.Is(err, access.ErrTokenExists):
		return &s2api.Error{Code: s2api.CodeResourceAlreadyExists, Message: "access token already exists", Err: err}
	}
	var se *s2api.Error
	if errors.As(err, &se) {
		return err
	}
	return &s2api.Error{Code: s2api.CodeUnavailable, Message: "access tokens cannot be read or written now", Err: err}
}

// denied sends err (of package access) if there is one, and reports whether there was.
func (s *Server) denied(q *request, err error) bool { return failed(q, s.accessError(err)) }

// authenticate finds the caller of q: with WithAccess its token's principal, else the root
// (after WithBearerToken's check, if any). It answers the call itself (401) if there is none.
func (s *Server) authenticate(q *request) bool {
	if s.opts.access == nil {
		if s.opts.tokenSet && !s.authorized(q.r) {
			writeError(q.w, &s2api.Error{Code: s2api.CodeAuthn, Message: "missing or invalid bearer token"})
			return false
		}
		q.principal = access.RootPrincipal
		return true
	}
	q.bearer = bearer(q.r)
	p, err := s.opts.access.Authenticate(q.ctx, q.bearer)
	if s.denied(q, err) {
		return false
	}
	q.principal = p
	return true
}

// guard ends q's context when its token is revoked or expires while the call runs (a
// session, a long poll), with the refusal as the context's cause. It checks the token
// again every refresh interval, and learns at once of a revocation through this daemon's
// authorizer. The returned stop ends the watch and waits for its goroutine.
func (s *Server) guard(q *request) (stop func()) {
	p := q.principal
	if s.opts.access == nil || p == nil || p.Root {
		return func() {}
	}
	ctx, cancel := context.WithCancelCause(q.ctx)
	q.ctx = ctx
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var expiry <-chan time.Time
		if !p.ExpiresAt.IsZero() {
			t := time.NewTimer(time.Until(p.ExpiresAt))
			defer t.Stop()
			expiry = t.C
		}
		tick := time.NewTicker(s.opts.access.RefreshInterval())
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-p.Revoked():
				cancel(&access.RefusedError{Reason: access.ReasonRevoked, Msg: "access token " + quote(p.ID) + " was revoked"})
				return
			case <-expiry:
				cancel(&access.RefusedError{Reason: access.ReasonExpired, Msg: "access token " + quote(p.ID) + " expired"})
				return
			case <-tick.C:
				_, err := s.opts.access.Authenticate(ctx, q.bearer)
				var re *access.RefusedError
				if errors.As(err, &re) {
					cancel(err)
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		cancel(nil)
	}
}

func quote(s string) string { return `"` + s + `"` }

// endedByAccess returns S2's error for a call whose context guard ended, and nil otherwise.
func (s *Server) endedByAccess(q *request) error {
	var re *access.RefusedError
	if q.ctx.Err() == nil || !errors.As(context.Cause(q.ctx), &re) {
		return nil
	}
	return s.accessError(re)
}

// routeCheck is what a route's method needs of the caller's scope before its handler runs.
// Names a handler takes from the body (a created basin or stream, an issued token's id) are
// checked by the handler.
type routeCheck func(p *access.Principal, q *request) error

func basinOp(op access.Operation) routeCheck {
	return func(p *access.Principal, q *request) error { return p.CheckBasin(op, q.name) }
}

func streamOp(ops ...access.Operation) routeCheck {
	return func(p *access.Principal, q *request) error {
		for _, op := range ops {
			if err := p.CheckStream(op, q.basin, q.name); err != nil {
				return err
			}
		}
		return nil
	}
}

// routeChecks holds a check for every method of every route (a test holds it to that); a
// route missing here is refused.
var routeChecks = map[string]routeCheck{
	"GET /basins":       func(p *access.Principal, _ *request) error { return p.CheckOp(access.ListBasins) },
	"POST /basins":      func(p *access.Principal, _ *request) error { return p.CheckOp(access.CreateBasin) },
	"GET /basins/{b}":   basinOp(access.GetBasinConfig),
	"PATCH /basins/{b}": basinOp(access.ReconfigureBasin),
	"PUT /basins/{b}": func(p *access.Principal, q *request) error {
		return errors.Join(basinOp(access.CreateBasin)(p, q), basinOp(access.ReconfigureBasin)(p, q))
	},
	"DELETE /basins/{b}":       basinOp(access.DeleteBasin),
	"GET /streams":             func(p *access.Principal, q *request) error { return p.CheckBasin(access.ListStreams, q.basin) },
	"POST /streams":            func(p *access.Principal, q *request) error { return p.CheckBasin(access.CreateStream, q.basin) },
	"GET /streams/{s}":         streamOp(access.GetStreamConfig),
	"PATCH /streams/{s}":       streamOp(access.ReconfigureStream),
	"PUT /streams/{s}":         streamOp(access.CreateStream, access.ReconfigureStream),
	"DELETE /streams/{s}":      streamOp(access.DeleteStream),
	"GET /streams/{s}/records": streamOp(access.Read),
	// An append needs append, trim or fence for each of its records (checkAppend); here,
	// one of them on the stream.
	"POST /streams/{s}/records": func(p *access.Principal, q *request) error {
		var first error
		for _, op := range []access.Operation{access.Append, access.Trim, access.Fence} {
			err := p.CheckStream(op, q.basin, q.name)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		return first
	},
	"GET /streams/{s}/records/tail": streamOp(access.CheckTail),
	"GET /access-tokens":            func(p *access.Principal, _ *request) error { return p.CheckOp(access.ListAccessTokens) },
	"POST /access-tokens":           func(p *access.Principal, _ *request) error { return p.CheckOp(access.IssueAccessToken) },
	"DELETE /access-tokens/{id}": func(p *access.Principal, q *request) error {
		return p.CheckToken(access.RevokeAccessToken, q.name)
	},
}

// permit checks q's route and method against the caller's scope, after making a stream's
// name full (auto_prefix_streams). It answers the call itself if the scope refuses it.
func (s *Server) permit(q *request, method string) bool {
	p := q.principal
	if p.Root {
		return true
	}
	if strings.HasPrefix(q.route, "/streams/{s}") && p.AutoPrefixStreams {
		q.name = p.StreamName(q.name)
		if failed(q, s2api.ValidateStreamName(q.name)) {
			return false
		}
	}
	check, ok := routeChecks[method+" "+q.route]
	if !ok {
		check, ok = groupRouteChecks[method+" "+q.route]
	}
	if !ok {
		return !s.denied(q, &access.RefusedError{Reason: access.ReasonOperation, Msg: "no operation is known for " + method + " " + q.route})
	}
	err := check(p, q)
	if err != nil {
		// errors.Join of two refusals: report the first.
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			err = j.Unwrap()[0]
		}
	}
	return !s.denied(q, err)
}

// checkAppend checks that the caller may append in's records: append for ordinary records,
// trim and fence for those commands. It returns S2's error.
func (s *Server) checkAppend(q *request, in batchfmt.AppendInput) error {
	p := q.principal
	if p.Root {
		return nil
	}
	var need access.OpSet
	for i := range in.Records {
		switch in.Records[i].Command() {
		case batchfmt.CommandTrim:
			need = need.With(access.Trim)
		case batchfmt.CommandFence:
			need = need.With(access.Fence)
		default:
			need = need.With(access.Append)
		}
	}
	for _, op := range need.List() {
		if err := p.CheckStream(op, q.basin, q.name); err != nil {
			return s.accessError(err)
		}
	}
	return nil
}
