package server

import (
	"net/http"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/s2api"
)

func (s *Server) listStreams(q *request) {
	lr, ok := listRequest(q)
	if !ok || !scopeStreamList(q, &lr) {
		return
	}
	resp, err := s.b.ListStreams(q.ctx, q.basin, lr)
	resp.Streams = nonNil(scopeStreams(q, resp.Streams))
	reply(q, http.StatusOK, resp, err)
}

func (s *Server) createStream(q *request) { s.idempotent(q, s.createStreamBody) }

func (s *Server) createStreamBody(q *request, body []byte) {
	var req s2api.CreateStreamRequest
	if failed(q, decodeJSON(body, &req)) || failed(q, s2api.ValidateStreamName(req.Stream)) {
		return
	}
	req.Stream = q.principal.StreamName(req.Stream)
	if failed(q, s2api.ValidateStreamName(req.Stream)) ||
		s.denied(q, q.principal.CheckStream(access.CreateStream, q.basin, req.Stream)) {
		return
	}
	cfg := s2api.StreamConfig{}
	if req.Config != nil {
		if failed(q, req.Config.Validate()) {
			return
		}
		cfg = *req.Config
	}
	info, err := s.b.CreateStream(q.ctx, q.basin, req.Stream, cfg)
	info.Name = q.principal.Relative(info.Name)
	reply(q, http.StatusCreated, info, err)
}

// ensureStream is PUT /streams/{s}: 201 with the new stream's info, or 200 with the existing
// one's after reconfiguring it with the fields the body gives.
func (s *Server) ensureStream(q *request) {
	body, err := s.readBody(q)
	if failed(q, err) {
		return
	}
	cfg, err := s2api.DecodeEnsureStreamBody(q.name, body)
	if failed(q, err) {
		return
	}
	info, err := s.b.CreateStream(q.ctx, q.basin, q.name, cfg)
	info.Name = q.principal.Relative(info.Name)
	if ensureCreated(q, info, err) {
		return
	}
	before, err := s.b.GetStreamConfig(q.ctx, q.basin, q.name)
	if failed(q, err) {
		return
	}
	// An ensure has PUT's meaning: the stream's config becomes the defaults changed by the
	// fields given, every field set, not the old config changed by them.
	base, err := s.b.StreamDefaults(q.ctx, q.basin)
	if failed(q, err) {
		return
	}
	after, err := s.b.ReconfigureStream(q.ctx, q.basin, q.name, base.Merge(cfg))
	if failed(q, err) {
		return
	}
	info, err = s.streamInfo(q)
	if failed(q, err) {
		return
	}
	info.Name = q.principal.Relative(info.Name)
	q.w.Header().Set(hdrProvisionResult, provisionResult(before, after))
	writeJSON(q.w, http.StatusOK, info)
}

// streamInfo returns the info of the stream q names.
func (s *Server) streamInfo(q *request) (s2api.StreamInfo, error) {
	after := ""
	for {
		page, err := s.b.ListStreams(q.ctx, q.basin, s2api.ListRequest{Prefix: q.name, StartAfter: after, Limit: s2api.MaxListLimit})
		if err != nil {
			return s2api.StreamInfo{}, err
		}
		for _, st := range page.Streams {
			if st.Name == q.name {
				return st, nil
			}
			after = st.Name
		}
		if !page.HasMore || len(page.Streams) == 0 {
			return s2api.StreamInfo{}, s2api.Errorf(s2api.CodeStreamNotFound, "stream %q not found", q.name)
		}
	}
}

func (s *Server) getStreamConfig(q *request) {
	cfg, err := s.b.GetStreamConfig(q.ctx, q.basin, q.name)
	reply(q, http.StatusOK, cfg, err)
}

func (s *Server) reconfigureStream(q *request) {
	body, err := s.readBody(q)
	if failed(q, err) {
		return
	}
	r, reset, err := s2api.DecodeStreamReconfigurationJSON(body)
	if failed(q, err) {
		return
	}
	if len(reset) > 0 { // fields sent as null go back to their defaults
		base, err := s.b.StreamDefaults(q.ctx, q.basin)
		if failed(q, err) {
			return
		}
		r = r.ResetFrom(base, reset)
	}
	cfg, err := s.b.ReconfigureStream(q.ctx, q.basin, q.name, r)
	reply(q, http.StatusOK, cfg, err)
}

func (s *Server) deleteStream(q *request) { accepted(q, s.b.DeleteStream(q.ctx, q.basin, q.name)) }
