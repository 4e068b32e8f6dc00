package commitclient

import (
	"context"
	"strings"

	"github.com/sluice-dev/sluice/committer/wire"
)

// Transport carries a commit request to the committer at url. HTTP is the one a Client
// uses by default; a program may give another (a simulated network). An error means no
// answer: one matching ErrUnreachable says the request surely did not arrive; after any
// other it may have been committed.
type Transport interface {
	Commit(ctx context.Context, url string, req *wire.Request) (*wire.Response, error)
}

// Local is a committer in this process (a *committer.Committer): it takes the requests for
// its URL without HTTP or JSON.
type Local interface {
	URL() string
	Commit(ctx context.Context, req *wire.Request) *wire.Response
}

func sameURL(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}
