package commitclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
)

// Client sends one stream's commit requests to its committer and decides when to commit
// directly instead. Each writer (a producer, a group member) holds its own: the role it
// saw and the committer's last failure are per stream and per writer.
type Client struct {
	cfg Config

	mu          sync.Mutex
	role        manifest.CommitterRole // as last read or answered
	directUntil time.Time              // a committer failed: commit directly until then
}

// New returns a client of cfg, its zero fields set to their defaults.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg.withDefaults()}, nil
}

// Observe records the stream's committer role as the caller just read it in the manifest
// (the zero role: none). The same holder's lease never moves back: a journal committer
// vouches for its role in its answers (later than the manifest's, which it does not renew).
func (c *Client) Observe(role manifest.CommitterRole) {
	c.mu.Lock()
	if role.ID == "" || role.ID != c.role.ID || role.URL != c.role.URL || role.UntilMs > c.role.UntilMs {
		c.role = role
	}
	c.mu.Unlock()
}

// URL is where the next request goes: the stream's committer while its role is live, else
// Config.URL; "" to commit directly (none, or one failed less than DirectFor ago).
func (c *Client) URL() string {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Before(c.directUntil) {
		return ""
	}
	if c.role.URL != "" && c.role.Live(now) {
		return c.role.URL
	}
	return c.cfg.URL
}

// Commit sends req to URL and returns the committer's answer, which fits req (a result per
// batch and per checkpoint). When the committer says another holds the role, req goes to
// the holder once. Every failure is an *Error (see its Unknown), after which URL is "" for
// DirectFor; ErrDirect when URL was "" (nothing was sent).
func (c *Client) Commit(ctx context.Context, req *wire.Request) (*wire.Response, error) {
	url := c.URL()
	if url == "" {
		return nil, ErrDirect
	}
	resp, err := c.send(ctx, url, req)
	if held := roleHeld(resp, err); held != nil && held.URL != "" && !sameURL(held.URL, url) {
		url = held.URL // the role moved: ask its holder once
		resp, err = c.send(ctx, url, req)
	}
	if err == nil && resp.Error == nil && resp.Fits(req) {
		if resp.Role != nil {
			c.Observe(*resp.Role) // renewed: keep sending there without reading the manifest
		}
		return resp, nil
	}
	fail := &Error{URL: url}
	switch {
	case err != nil:
		fail.Err, fail.Unknown = err, !errors.Is(err, ErrUnreachable)
	case resp.Error != nil:
		fail.Err, fail.Unknown = resp.Error, resp.Error.Code == wire.CodeStorage
	default:
		fail.Err, fail.Unknown = errors.New("an answer that does not fit the request"), true
	}
	c.mu.Lock()
	c.directUntil = c.cfg.Now().Add(c.cfg.DirectFor)
	c.mu.Unlock()
	return nil, fail
}

// send asks the committer at url, waiting RequestTimeout at most.
func (c *Client) send(ctx context.Context, url string, req *wire.Request) (*wire.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	local := c.cfg.Local != nil && sameURL(url, c.cfg.Local.URL())
	if carries(req) && !(local && journalLocal(c.cfg.Local)) {
		return nil, fmt.Errorf("%w (%w): %s", ErrCarried, ErrUnreachable, url)
	}
	if local {
		return c.cfg.Local.Commit(ctx, req), nil
	}
	return c.cfg.Transport.Commit(ctx, url, req)
}

// CanCarry reports whether the next request goes to a journal committer in this process,
// so that its batches may carry their bytes (wire.Batch.Data) instead of being uploaded.
func (c *Client) CanCarry() bool {
	l := c.cfg.Local
	return l != nil && journalLocal(l) && sameURL(c.URL(), l.URL())
}

// journalLocal reports whether l commits through a journal (committer.Committer.Journal).
func journalLocal(l Local) bool {
	j, ok := l.(interface{ Journal() bool })
	return ok && j.Journal()
}

func carries(req *wire.Request) bool {
	for i := range req.Batches {
		if req.Batches[i].Carried() {
			return true
		}
	}
	return false
}

// roleHeld is the holder a role_held answer names, or nil.
func roleHeld(resp *wire.Response, err error) *manifest.CommitterRole {
	if err != nil || resp.Error == nil || resp.Error.Code != wire.CodeRoleHeld {
		return nil
	}
	return resp.Error.Holder
}
