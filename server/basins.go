package server

import (
	"net/http"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/s2api"
)

func (s *Server) listBasins(q *request) {
	lr, ok := listRequest(q)
	if !ok || !scopeBasinList(q, &lr) {
		return
	}
	resp, err := s.b.ListBasins(q.ctx, lr)
	resp.Basins = nonNil(scopeBasins(q, resp.Basins))
	reply(q, http.StatusOK, resp, err)
}

func (s *Server) createBasin(q *request) { s.idempotent(q, s.createBasinBody) }

func (s *Server) createBasinBody(q *request, body []byte) {
	var req s2api.CreateBasinRequest
	if failed(q, decodeJSON(body, &req)) || failed(q, s2api.ValidateBasinName(req.Basin)) ||
		s.denied(q, q.principal.CheckBasin(access.CreateBasin, req.Basin)) {
		return
	}
	cfg := s2api.BasinConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	if cfg.DefaultStreamConfig != nil && failed(q, cfg.DefaultStreamConfig.Validate()) {
		return
	}
	info, err := s.b.CreateBasin(q.ctx, req.Basin, cfg)
	reply(q, http.StatusCreated, info, err)
}

// ensureBasin is PUT /basins/{b}: create the basin if it does not exist (201), else 200 with
// its info. An existing basin's config is reconfigured to the body's config when one is given.
func (s *Server) ensureBasin(q *request) {
	if failed(q, s2api.ValidateBasinName(q.name)) {
		return
	}
	body, err := s.readBody(q)
	var req struct {
		Config *s2api.BasinConfig `json:"config"`
	}
	if failed(q, err) || failed(q, decodeJSON(body, &req)) {
		return
	}
	cfg := s2api.BasinConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	if info, err := s.b.CreateBasin(q.ctx, q.name, cfg); ensureCreated(q, info, err) {
		return
	}
	// An ensure has PUT's meaning: the basin's config becomes the one given (none given: the
	// defaults), not the old one changed by the fields given.
	before, err := s.b.GetBasinConfig(q.ctx, q.name)
	if failed(q, err) {
		return
	}
	r := s2api.BasinReconfiguration{DefaultStreamConfig: cfg.DefaultStreamConfig, ReplaceDefaultStreamConfig: true,
		CreateStreamOnAppend: &cfg.CreateStreamOnAppend, CreateStreamOnRead: &cfg.CreateStreamOnRead}
	after, err := s.b.ReconfigureBasin(q.ctx, q.name, r)
	if failed(q, err) {
		return
	}
	q.w.Header().Set(hdrProvisionResult, provisionResult(before, after))
	info, err := s.basinInfo(q)
	reply(q, http.StatusOK, info, err)
}

// basinInfo returns the info of the basin q names.
func (s *Server) basinInfo(q *request) (s2api.BasinInfo, error) {
	page, err := s.b.ListBasins(q.ctx, s2api.ListRequest{Prefix: q.name, Limit: s2api.MaxListLimit})
	if err != nil {
		return s2api.BasinInfo{}, err
	}
	for _, b := range page.Basins {
		if b.Name == q.name {
			return b, nil
		}
	}
	return s2api.BasinInfo{}, s2api.ErrBasinNotFound
}

func (s *Server) getBasinConfig(q *request) {
	cfg, err := s.b.GetBasinConfig(q.ctx, q.name)
	reply(q, http.StatusOK, cfg, err)
}

func (s *Server) reconfigureBasin(q *request) {
	body, err := s.readBody(q)
	if failed(q, err) {
		return
	}
	r, err := s2api.DecodeBasinReconfigurationJSON(body)
	if failed(q, err) {
		return
	}
	cfg, err := s.b.ReconfigureBasin(q.ctx, q.name, r)
	reply(q, http.StatusOK, cfg, err)
}

func (s *Server) deleteBasin(q *request) { accepted(q, s.b.DeleteBasin(q.ctx, q.name)) }
