package server

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/sluice-dev/sluice/s2api"
)

// A route is one path shape of the API and the handlers of its methods.
type route struct {
	name     string   // the metrics label and what 405 answers name
	segs     []string // the path's segments; nameSeg stands for the basin or stream named
	handlers []methodHandler
}

// methodHandler serves one method of a route; a route lists them in its Allow header's order.
type methodHandler struct {
	method string
	serve  func(*Server, *request)
}

// nameSeg in a route's segments matches any one segment, which becomes request.name (the
// first) or request.group (the second: a consumer group of the stream named).
const nameSeg = "{}"

var routes = []route{
	{"/basins", []string{"basins"}, []methodHandler{
		{http.MethodGet, (*Server).listBasins},
		{http.MethodPost, (*Server).createBasin},
	}},
	{"/basins/{b}", []string{"basins", nameSeg}, []methodHandler{
		{http.MethodGet, (*Server).getBasinConfig},
		{http.MethodPatch, (*Server).reconfigureBasin},
		{http.MethodPut, (*Server).ensureBasin},
		{http.MethodDelete, (*Server).deleteBasin},
	}},
	{"/streams", []string{"streams"}, []methodHandler{
		{http.MethodGet, (*Server).listStreams},
		{http.MethodPost, (*Server).createStream},
	}},
	{"/streams/{s}", []string{"streams", nameSeg}, []methodHandler{
		{http.MethodGet, (*Server).getStreamConfig},
		{http.MethodPatch, (*Server).reconfigureStream},
		{http.MethodPut, (*Server).ensureStream},
		{http.MethodDelete, (*Server).deleteStream},
	}},
	{"/streams/{s}/records", []string{"streams", nameSeg, "records"}, []methodHandler{
		{http.MethodGet, (*Server).read},
		{http.MethodPost, (*Server).append},
	}},
	{"/streams/{s}/records/tail", []string{"streams", nameSeg, "records", "tail"}, []methodHandler{
		{http.MethodGet, (*Server).checkTail},
	}},
	{"/streams/{s}/records/tail", []string{"streams", nameSeg, "tail"}, []methodHandler{
		{http.MethodGet, (*Server).checkTail},
	}},
	// Consumer groups: sluice's own routes (groups.go).
	{"/streams/{s}/groups", []string{"streams", nameSeg, "groups"}, []methodHandler{
		{http.MethodGet, (*Server).listGroups},
	}},
	{"/streams/{s}/groups/{g}", []string{"streams", nameSeg, "groups", nameSeg}, []methodHandler{
		{http.MethodDelete, (*Server).deleteGroup},
	}},
	{"/streams/{s}/groups/{g}/join", []string{"streams", nameSeg, "groups", nameSeg, "join"}, []methodHandler{
		{http.MethodPost, (*Server).joinGroup},
	}},
	{"/streams/{s}/groups/{g}/ack", []string{"streams", nameSeg, "groups", nameSeg, "ack"}, []methodHandler{
		{http.MethodPost, (*Server).ackGroup},
	}},
	{"/streams/{s}/groups/{g}/reset", []string{"streams", nameSeg, "groups", nameSeg, "reset"}, []methodHandler{
		{http.MethodPost, (*Server).resetGroup},
	}},
	{"/access-tokens", []string{"access-tokens"}, []methodHandler{
		{http.MethodGet, (*Server).listAccessTokens},
		{http.MethodPost, (*Server).issueAccessToken},
	}},
	{"/access-tokens/{id}", []string{"access-tokens", nameSeg}, []methodHandler{
		{http.MethodDelete, (*Server).revokeAccessToken},
	}},
}

// match reports whether segs has rt's shape, and returns the segments in its nameSeg places.
func (rt *route) match(segs []string) (name, group string, ok bool) {
	if len(segs) != len(rt.segs) {
		return "", "", false
	}
	n := 0
	for i, want := range rt.segs {
		switch {
		case want == nameSeg && n == 0:
			name, n = segs[i], 1
		case want == nameSeg:
			group = segs[i]
		case want != segs[i]:
			return "", "", false
		}
	}
	return name, group, true
}

// handler returns the route's handler for method, or nil and the methods it allows.
func (rt *route) handler(method string) (serve func(*Server, *request), allowed string) {
	methods := make([]string, len(rt.handlers))
	for i, mh := range rt.handlers {
		if mh.method == method {
			return mh.serve, ""
		}
		methods[i] = mh.method
	}
	return nil, strings.Join(methods, ", ")
}

// splitPath splits the escaped path into unescaped segments, after an optional /v1 prefix, so
// that "a%2Fb" stays one segment.
func splitPath(escaped string) ([]string, error) {
	p := strings.TrimPrefix(escaped, "/")
	if p == "v1" {
		p = ""
	} else if strings.HasPrefix(p, "v1/") {
		p = p[3:]
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil, nil
	}
	raw := strings.Split(p, "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		u, err := url.PathUnescape(r)
		if err != nil {
			return nil, s2api.Errorf(s2api.CodeBadPath, "bad percent-encoding in path segment %q", r)
		}
		segs[i] = u
	}
	return segs, nil
}

// dispatch finds q's route and method, checks the stream routes' headers and the stream's
// name, and calls the handler.
func (s *Server) dispatch(q *request) {
	segs, err := splitPath(q.r.URL.EscapedPath())
	if err != nil {
		writeError(q.w, err)
		return
	}
	m := q.r.Method
	var rt *route
	for i := range routes {
		if name, group, ok := routes[i].match(segs); ok {
			rt, q.name, q.group = &routes[i], name, group
			break
		}
	}
	if rt == nil {
		writeError(q.w, s2api.Errorf(s2api.CodeNotFound, "no route for %s %s", m, q.r.URL.Path))
		return
	}
	q.route = rt.name
	serve, allowed := rt.handler(m)
	if serve == nil {
		q.w.Header().Set("Allow", allowed)
		writeError(q.w, s2api.Errorf(s2api.CodeMethodNotAllowed, "method %s not allowed on %s", m, q.route))
		return
	}
	if strings.HasPrefix(q.route, "/streams") {
		q.basin = q.r.Header.Get("S2-Basin")
		if q.basin == "" {
			writeError(q.w, s2api.Errorf(s2api.CodeBadHeader, "missing S2-Basin header"))
			return
		}
		if strings.HasPrefix(q.route, "/streams/{s}") { // a name, even an empty one, is checked
			if err := s2api.ValidateStreamName(q.name); err != nil {
				writeError(q.w, err)
				return
			}
		}
		f, err := s2api.ParseFormat(q.r.Header.Get("S2-Format"))
		if err != nil {
			writeError(q.w, err)
			return
		}
		q.format = f
	}
	if !s.permit(q, m) {
		return
	}
	serve(s, q)
}
