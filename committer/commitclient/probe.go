package commitclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
)

// ProbeTimeout bounds the wait for a probe's answer: a holder that does not answer within it
// counts as gone.
const ProbeTimeout = 2 * time.Second

// ErrProbe is matched by a probe that got no usable answer (Probe's err).
var ErrProbe = errors.New("commitclient: probe unanswered")

// Probe asks the committer at url whether its current journal is j (a wire.Request with
// Journal set), through t, or in process when url is local's URL (local may be nil). A
// journal committer answers at once: alive true when it commits through j now, and role is
// the role it vouches for (its id and URL, its lease from its own clock); alive false when it
// does not (another incarnation, a reset, closing, no journal). err, matching ErrProbe, when
// no answer came within ProbeTimeout or the answer was neither: the caller treats the holder
// as gone.
func Probe(ctx context.Context, t Transport, local Local, url string, j journal.ID) (alive bool, role manifest.CommitterRole, err error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	req := &wire.Request{Journal: j.String()}
	var resp *wire.Response
	if local != nil && sameURL(url, local.URL()) {
		resp = local.Commit(ctx, req)
	} else if t == nil {
		return false, role, fmt.Errorf("%w: no transport to %s", ErrProbe, url)
	} else if resp, err = t.Commit(ctx, url, req); err != nil {
		return false, role, fmt.Errorf("%w: %s: %w", ErrProbe, url, err)
	}
	switch {
	case resp.Error == nil:
		if resp.Role != nil {
			role = *resp.Role
		}
		return true, role, nil
	case resp.Error.Code == wire.CodeNotHolder:
		return false, role, nil
	default:
		return false, role, fmt.Errorf("%w: %s: %w", ErrProbe, url, resp.Error)
	}
}

// Probe asks holder (the stream's role as the manifest names it, possibly lapsed) whether it
// still commits through j, with the client's transport. When it does, the client takes the
// role it vouches for (Observe), so that URL names it again and the next request goes to
// it, even if an earlier failure had the client commit directly (while the holder holds
// the journal, no direct write can). See the package func Probe for alive and err.
func (c *Client) Probe(ctx context.Context, holder manifest.CommitterRole, j journal.ID) (alive bool, err error) {
	alive, role, err := Probe(ctx, c.cfg.Transport, c.cfg.Local, holder.URL, j)
	if alive && role.ID == holder.ID && role.URL != "" {
		c.Observe(role)
		c.mu.Lock()
		c.directUntil = time.Time{}
		c.mu.Unlock()
	}
	return alive, err
}
