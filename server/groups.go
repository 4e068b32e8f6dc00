package server

import (
	"context"
	"net/http"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/s2api"
)

// Consumer groups are sluice's own routes, not S2's (see s2api/groups.go): a stream's groups
// under /streams/{s}/groups, with the stream routes' headers, auth and access checks (the
// operation each call needs is access.GroupCall's).

// GroupBackend is implemented by a Backend that serves consumer groups (the engine does). A
// server whose backend does not answers the group routes with 404 not_found.
//
// Errors are the Backend's, plus *s2api.GroupFencedError for a stale member's
// acknowledgement.
type GroupBackend interface {
	// ListGroups returns the stream's groups, sorted by name, with their lag.
	ListGroups(ctx context.Context, basin, stream string) (s2api.ListGroupsResponse, error)
	// JoinGroup makes the caller the group's one member: the group's epoch is bumped (the
	// previous member is fenced), and a group that does not exist is created at req.Start.
	JoinGroup(ctx context.Context, basin, stream, group string, req s2api.JoinGroupRequest) (s2api.JoinGroupResponse, error)
	// AckGroup moves the group's checkpoint forward as the member of req.Epoch.
	AckGroup(ctx context.Context, basin, stream, group string, req s2api.AckGroupRequest) (s2api.AckGroupResponse, error)
	// ResetGroup moves the group's checkpoint (creating the group if needed) and fences
	// its member.
	ResetGroup(ctx context.Context, basin, stream, group string, req s2api.ResetGroupRequest) (s2api.ResetGroupResponse, error)
	// DeleteGroup removes the group and fences its member; a missing group is 404.
	DeleteGroup(ctx context.Context, basin, stream, group string) error
}

func groupCheck(c access.GroupCall) routeCheck {
	return func(p *access.Principal, q *request) error { return p.CheckGroup(c, q.basin, q.name) }
}

// groupRouteChecks are the group routes' entries of routeChecks.
var groupRouteChecks = map[string]routeCheck{
	"GET /streams/{s}/groups":            groupCheck(access.GroupList),
	"POST /streams/{s}/groups/{g}/join":  groupCheck(access.GroupJoin),
	"POST /streams/{s}/groups/{g}/ack":   groupCheck(access.GroupAck),
	"POST /streams/{s}/groups/{g}/reset": groupCheck(access.GroupReset),
	"DELETE /streams/{s}/groups/{g}":     groupCheck(access.GroupDelete),
}

// groups returns the backend's groups, or answers 404 and returns nil. It also checks the
// group named in the path.
func (s *Server) groups(q *request) GroupBackend {
	gb, ok := s.b.(GroupBackend)
	if !ok {
		writeError(q.w, s2api.Errorf(s2api.CodeNotFound, "this server has no consumer groups"))
		return nil
	}
	if q.route != "/streams/{s}/groups" && failed(q, s2api.ValidateGroupName(q.group)) {
		return nil
	}
	return gb
}

func (s *Server) listGroups(q *request) {
	if gb := s.groups(q); gb != nil {
		resp, err := gb.ListGroups(q.ctx, q.basin, q.name)
		resp.Groups = nonNil(resp.Groups)
		reply(q, http.StatusOK, resp, err)
	}
}

// groupBody reads q's JSON body into v and validates it if v has a Validate method; it
// answers the call and returns false on a problem.
func (s *Server) groupBody(q *request, v any) bool {
	body, err := s.readBody(q)
	if failed(q, err) || failed(q, decodeJSON(body, v)) {
		return false
	}
	if vv, ok := v.(interface{ Validate() error }); ok {
		return !failed(q, vv.Validate())
	}
	return true
}

func (s *Server) joinGroup(q *request) {
	gb := s.groups(q)
	var req s2api.JoinGroupRequest
	if gb == nil || !s.groupBody(q, &req) {
		return
	}
	resp, err := gb.JoinGroup(q.ctx, q.basin, q.name, q.group, req)
	reply(q, http.StatusOK, resp, err)
}

func (s *Server) ackGroup(q *request) {
	gb := s.groups(q)
	var req s2api.AckGroupRequest
	if gb == nil || !s.groupBody(q, &req) {
		return
	}
	resp, err := gb.AckGroup(q.ctx, q.basin, q.name, q.group, req)
	reply(q, http.StatusOK, resp, err)
}

func (s *Server) resetGroup(q *request) {
	gb := s.groups(q)
	var req s2api.ResetGroupRequest
	if gb == nil || !s.groupBody(q, &req) {
		return
	}
	resp, err := gb.ResetGroup(q.ctx, q.basin, q.name, q.group, req)
	reply(q, http.StatusOK, resp, err)
}

func (s *Server) deleteGroup(q *request) {
	if gb := s.groups(q); gb != nil {
		accepted(q, gb.DeleteGroup(q.ctx, q.basin, q.name, q.group))
	}
}
