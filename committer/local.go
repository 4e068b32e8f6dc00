package committer

import (
	"context"
	"strings"
)

// Local is a Caller for the process that runs c: requests for c's own URL go to c directly
// (no HTTP, no JSON), every other URL through Next (default: an HTTP Client without token).
type Local struct {
	Committer *Committer
	Next      Caller
}

// Commit sends req to url, in process when url is the committer's own.
func (l *Local) Commit(ctx context.Context, url string, req *Request) (*Response, error) {
	if l.Committer != nil && sameURL(url, l.Committer.cfg.URL) {
		return l.Committer.Commit(ctx, req), nil
	}
	next := l.Next
	if next == nil {
		next = &Client{}
	}
	return next.Commit(ctx, url, req)
}

func sameURL(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}
