package server

import (
	"net/http"

	"github.com/sluice-dev/sluice/s2api"
)

// S2's access-token routes. The authorizer (WithAccess) checks the caller's scope: the
// operation, the token id against its access_tokens set, and an issued scope against its
// own. Without WithAccess there are no tokens to manage.

var errAccessOff = s2api.Errorf(s2api.CodePermissionDenied,
	"access tokens are off: the daemon has no root token (--auth-token)")

func (s *Server) listAccessTokens(q *request) {
	if failed(q, s.accessOff()) {
		return
	}
	lr, ok := listRequest(q)
	if !ok {
		return
	}
	infos, more, err := s.opts.access.List(q.ctx, q.principal, lr.Prefix, lr.StartAfter, lr.Limit)
	if s.denied(q, err) {
		return
	}
	writeJSON(q.w, http.StatusOK, s2api.ListAccessTokensResponse{AccessTokens: nonNil(infos), HasMore: more})
}

func (s *Server) issueAccessToken(q *request) {
	if failed(q, s.accessOff()) {
		return
	}
	body, err := s.readBody(q)
	if failed(q, err) {
		return
	}
	var req s2api.IssueAccessTokenRequest
	if failed(q, decodeJSON(body, &req)) {
		return
	}
	secret, err := s.opts.access.Issue(q.ctx, q.principal, req)
	if s.denied(q, err) {
		return
	}
	s.log.Info("access token issued", "id", req.ID, "by", q.principal.Name())
	writeJSON(q.w, http.StatusCreated, s2api.IssueAccessTokenResponse{AccessToken: secret})
}

func (s *Server) revokeAccessToken(q *request) {
	if failed(q, s.accessOff()) || s.denied(q, s.opts.access.Revoke(q.ctx, q.principal, q.name)) {
		return
	}
	s.log.Info("access token revoked", "id", q.name, "by", q.principal.Name())
	q.w.WriteHeader(http.StatusNoContent)
}

func (s *Server) accessOff() error {
	if s.opts.access == nil {
		return errAccessOff
	}
	return nil
}
