package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/sluice-dev/sluice/s2api"
)

func parseList(q *request) (s2api.ListRequest, error) {
	v := q.r.URL.Query()
	lr := s2api.ListRequest{Prefix: v.Get("prefix"), StartAfter: v.Get("start_after"), Limit: s2api.MaxListLimit}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return lr, s2api.Errorf(s2api.CodeBadQuery, "limit=%q is not a non-negative integer", l)
		}
		if n > 0 && n < s2api.MaxListLimit {
			lr.Limit = n
		}
	}
	if lr.StartAfter != "" && lr.Prefix != "" && lr.StartAfter < lr.Prefix {
		// Everything with the prefix sorts after start_after: nothing to skip.
		lr.StartAfter = ""
	}
	return lr, nil
}

func (s *Server) listBasins(q *request) {
	lr, err := parseList(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	resp, err := s.b.ListBasins(q.ctx, lr)
	if err != nil {
		writeError(q.w, err)
		return
	}
	if resp.Basins == nil {
		resp.Basins = []s2api.BasinInfo{}
	}
	writeJSON(q.w, http.StatusOK, resp)
}

func (s *Server) createBasin(q *request) { s.idempotent(q, s.createBasinBody) }

func (s *Server) createBasinBody(q *request, body []byte) {
	var req s2api.CreateBasinRequest
	if err := decodeJSON(body, &req); err != nil {
		writeError(q.w, err)
		return
	}
	if err := s2api.ValidateBasinName(req.Basin); err != nil {
		writeError(q.w, err)
		return
	}
	cfg := s2api.BasinConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	if cfg.DefaultStreamConfig != nil {
		if err := cfg.DefaultStreamConfig.Validate(); err != nil {
			writeError(q.w, err)
			return
		}
	}
	info, err := s.b.CreateBasin(q.ctx, req.Basin, cfg)
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusCreated, info)
}

// ensureBasin is PUT /basins/{b}: create the basin if it does not exist (201), else 200 with
// its info. An existing basin's config is reconfigured to the body's config when one is given.
func (s *Server) ensureBasin(q *request) {
	if err := s2api.ValidateBasinName(q.name); err != nil {
		writeError(q.w, err)
		return
	}
	body, err := s.readBody(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	var req struct {
		Config *s2api.BasinConfig `json:"config"`
	}
	if err := decodeJSON(body, &req); err != nil {
		writeError(q.w, err)
		return
	}
	cfg := s2api.BasinConfig{}
	if req.Config != nil {
		cfg = *req.Config
	}
	info, err := s.b.CreateBasin(q.ctx, q.name, cfg)
	if err == nil {
		q.w.Header().Set(hdrProvisionResult, "created")
		writeJSON(q.w, http.StatusCreated, info)
		return
	}
	if !errors.Is(err, s2api.ErrAlreadyExists) {
		writeError(q.w, err)
		return
	}
	// An ensure has PUT's meaning: the basin's config becomes the one given (none given: the
	// defaults), not the old one changed by the fields given.
	before, err := s.b.GetBasinConfig(q.ctx, q.name)
	if err != nil {
		writeError(q.w, err)
		return
	}
	r := s2api.BasinReconfiguration{DefaultStreamConfig: cfg.DefaultStreamConfig, ReplaceDefaultStreamConfig: true,
		CreateStreamOnAppend: &cfg.CreateStreamOnAppend, CreateStreamOnRead: &cfg.CreateStreamOnRead}
	after, err := s.b.ReconfigureBasin(q.ctx, q.name, r)
	if err != nil {
		writeError(q.w, err)
		return
	}
	q.w.Header().Set(hdrProvisionResult, provisionResult(before, after))
	page, err := s.b.ListBasins(q.ctx, s2api.ListRequest{Prefix: q.name, Limit: s2api.MaxListLimit})
	if err != nil {
		writeError(q.w, err)
		return
	}
	for _, b := range page.Basins {
		if b.Name == q.name {
			writeJSON(q.w, http.StatusOK, b)
			return
		}
	}
	writeError(q.w, s2api.ErrBasinNotFound)
}

func (s *Server) getBasinConfig(q *request) {
	cfg, err := s.b.GetBasinConfig(q.ctx, q.name)
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusOK, cfg)
}

func (s *Server) reconfigureBasin(q *request) {
	body, err := s.readBody(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	r, err := s2api.DecodeBasinReconfigurationJSON(body)
	if err != nil {
		writeError(q.w, err)
		return
	}
	cfg, err := s.b.ReconfigureBasin(q.ctx, q.name, r)
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusOK, cfg)
}

func (s *Server) deleteBasin(q *request) {
	if err := s.b.DeleteBasin(q.ctx, q.name); err != nil {
		writeError(q.w, err)
		return
	}
	q.w.WriteHeader(http.StatusAccepted)
}

func (s *Server) listStreams(q *request) {
	lr, err := parseList(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	resp, err := s.b.ListStreams(q.ctx, q.basin, lr)
	if err != nil {
		writeError(q.w, err)
		return
	}
	if resp.Streams == nil {
		resp.Streams = []s2api.StreamInfo{}
	}
	writeJSON(q.w, http.StatusOK, resp)
}

func (s *Server) createStream(q *request) { s.idempotent(q, s.createStreamBody) }

func (s *Server) createStreamBody(q *request, body []byte) {
	var req s2api.CreateStreamRequest
	if err := decodeJSON(body, &req); err != nil {
		writeError(q.w, err)
		return
	}
	if err := s2api.ValidateStreamName(req.Stream); err != nil {
		writeError(q.w, err)
		return
	}
	cfg := s2api.StreamConfig{}
	if req.Config != nil {
		if err := req.Config.Validate(); err != nil {
			writeError(q.w, err)
			return
		}
		cfg = *req.Config
	}
	info, err := s.b.CreateStream(q.ctx, q.basin, req.Stream, cfg)
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusCreated, info)
}

// ensureStream is PUT /streams/{s}: 201 with the new stream's info, or 200 with the existing
// one's after reconfiguring it with the fields the body gives.
func (s *Server) ensureStream(q *request) {
	body, err := s.readBody(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	cfg, err := s2api.DecodeEnsureStreamBody(q.name, body)
	if err != nil {
		writeError(q.w, err)
		return
	}
	info, err := s.b.CreateStream(q.ctx, q.basin, q.name, cfg)
	if err == nil {
		q.w.Header().Set(hdrProvisionResult, "created")
		writeJSON(q.w, http.StatusCreated, info)
		return
	}
	if !errors.Is(err, s2api.ErrAlreadyExists) {
		writeError(q.w, err)
		return
	}
	before, err := s.b.GetStreamConfig(q.ctx, q.basin, q.name)
	if err != nil {
		writeError(q.w, err)
		return
	}
	// An ensure has PUT's meaning: the stream's config becomes the defaults changed by the
	// fields given, every field set, not the old config changed by them.
	base, err := s.b.StreamDefaults(q.ctx, q.basin)
	if err != nil {
		writeError(q.w, err)
		return
	}
	after, err := s.b.ReconfigureStream(q.ctx, q.basin, q.name, base.Merge(cfg))
	if err != nil {
		writeError(q.w, err)
		return
	}
	info, err = s.streamInfo(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	q.w.Header().Set(hdrProvisionResult, provisionResult(before, after))
	writeJSON(q.w, http.StatusOK, info)
}

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
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusOK, cfg)
}

func (s *Server) reconfigureStream(q *request) {
	body, err := s.readBody(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	r, reset, err := s2api.DecodeStreamReconfigurationJSON(body)
	if err != nil {
		writeError(q.w, err)
		return
	}
	if len(reset) > 0 { // fields sent as null go back to their defaults
		base, err := s.b.StreamDefaults(q.ctx, q.basin)
		if err != nil {
			writeError(q.w, err)
			return
		}
		r = r.ResetFrom(base, reset)
	}
	cfg, err := s.b.ReconfigureStream(q.ctx, q.basin, q.name, r)
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusOK, cfg)
}

func (s *Server) deleteStream(q *request) {
	if err := s.b.DeleteStream(q.ctx, q.basin, q.name); err != nil {
		writeError(q.w, err)
		return
	}
	q.w.WriteHeader(http.StatusAccepted)
}

// hdrProvisionResult tells an ensure's outcome (created, updated or noop); the SDK reads it.
const hdrProvisionResult = "S2-Provision-Result"

// provisionResult is "noop" when before and after render the same, else "updated".
func provisionResult(before, after any) string {
	b, err1 := json.Marshal(before)
	a, err2 := json.Marshal(after)
	if err1 == nil && err2 == nil && bytes.Equal(a, b) {
		return "noop"
	}
	return "updated"
}
