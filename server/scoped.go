package server

import (
	"net/http"

	"github.com/sluice-dev/sluice/s2api"
)

// What a token's scope changes in the answers of list and create calls: listings show only
// the basins and streams its sets match, and with auto_prefix_streams stream names are
// relative to its prefix both ways.

// scopeBasinList narrows lr to the caller's basins. It answers the call (an empty page) and
// returns false if none can be listed.
func scopeBasinList(q *request, lr *s2api.ListRequest) bool {
	var ok bool
	lr.Prefix, lr.StartAfter, ok = q.principal.Scope.Basins.ListWindow(lr.Prefix, lr.StartAfter)
	if !ok {
		writeJSON(q.w, http.StatusOK, s2api.ListBasinsResponse{Basins: []s2api.BasinInfo{}})
	}
	return ok
}

// scopeBasins drops the basins outside the caller's scope.
func scopeBasins(q *request, l []s2api.BasinInfo) []s2api.BasinInfo {
	set := q.principal.Scope.Basins
	out := l[:0]
	for _, b := range l {
		if set.Matches(b.Name) {
			out = append(out, b)
		}
	}
	return out
}

// scopeStreamList makes lr's names full (auto-prefix) and narrows lr to the caller's
// streams. It answers the call (an empty page) and returns false if none can be listed.
func scopeStreamList(q *request, lr *s2api.ListRequest) bool {
	p := q.principal
	if pre := p.StreamName(""); pre != "" {
		lr.Prefix = pre + lr.Prefix
		if lr.StartAfter != "" {
			lr.StartAfter = pre + lr.StartAfter
		}
	}
	var ok bool
	lr.Prefix, lr.StartAfter, ok = p.Scope.Streams.ListWindow(lr.Prefix, lr.StartAfter)
	if !ok {
		writeJSON(q.w, http.StatusOK, s2api.ListStreamsResponse{Streams: []s2api.StreamInfo{}})
	}
	return ok
}

// scopeStreams drops the streams outside the caller's scope and makes the names relative.
func scopeStreams(q *request, l []s2api.StreamInfo) []s2api.StreamInfo {
	p := q.principal
	out := l[:0]
	for _, st := range l {
		if p.Scope.Streams.Matches(st.Name) {
			st.Name = p.Relative(st.Name)
			out = append(out, st)
		}
	}
	return out
}
