package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/sluice-dev/sluice/s2api"
)

// failed sends err and reports whether there was one.
func failed(q *request, err error) bool {
	if err != nil {
		writeError(q.w, err)
		return true
	}
	return false
}

// reply sends err if there is one, else v as JSON with status.
func reply[T any](q *request, status int, v T, err error) {
	if !failed(q, err) {
		writeJSON(q.w, status, v)
	}
}

// accepted answers a delete: err, or 202 with no body.
func accepted(q *request, err error) {
	if !failed(q, err) {
		q.w.WriteHeader(http.StatusAccepted)
	}
}

// hdrProvisionResult tells an ensure's outcome (created, updated or noop); the SDK reads it.
const hdrProvisionResult = "S2-Provision-Result"

// ensureCreated answers an ensure's create: 201 with info if it succeeded, err unless it is
// ErrAlreadyExists. It reports whether the ensure is answered; if not, the caller replaces the
// existing one's config.
func ensureCreated[T any](q *request, info T, err error) bool {
	if err == nil {
		q.w.Header().Set(hdrProvisionResult, "created")
		writeJSON(q.w, http.StatusCreated, info)
		return true
	}
	return !errors.Is(err, s2api.ErrAlreadyExists) && failed(q, err)
}

// provisionResult is "noop" when before and after render the same, else "updated".
func provisionResult(before, after any) string {
	b, err1 := json.Marshal(before)
	a, err2 := json.Marshal(after)
	if err1 == nil && err2 == nil && bytes.Equal(a, b) {
		return "noop"
	}
	return "updated"
}

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

// listRequest parses q's list query, sending the error if it is bad.
func listRequest(q *request) (s2api.ListRequest, bool) {
	lr, err := parseList(q)
	return lr, !failed(q, err)
}

// nonNil returns l, or an empty list for nil, which JSON renders as [] rather than null.
func nonNil[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}
