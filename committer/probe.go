package committer

import (
	"context"
	"strings"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
)

// A journal committer does not renew its roles by manifest writes (docs/journal.md, "The
// lease"): the lease in the manifest lapses while the committer is alive. Its answers vouch
// for the role instead (vouch), and a committer or producer that finds the lease lapsed asks
// the holder whether it still commits through the journal the manifest names (a probe)
// before it seals that journal. The fence keeps this safe whatever the answer: a holder
// sealed while alive finds out at its next window.

// answerProbe answers a probe (wire.Request.Journal): no Error, with the role vouched for,
// when the probe names the journal c commits through now; else wire.CodeNotHolder (no
// journal mode, another journal after a reset, or closing).
func (c *Committer) answerProbe(req *wire.Request) *wire.Response {
	c.jmu.Lock()
	held := c.cfg.Journal && !c.jclosed && c.jid.String() == req.Journal
	c.jmu.Unlock()
	if !held {
		return &wire.Response{Error: &wire.Error{Code: wire.CodeNotHolder, Message: "journal " + req.Journal + " is not this committer's current journal"}}
	}
	return &wire.Response{Role: c.vouch()}
}

// vouch is the role c holds in every manifest that points at its journal: its lease runs a
// Lease from now by its clock, since it answers for itself.
func (c *Committer) vouch() *manifest.CommitterRole {
	until := uint64(max(c.cfg.Now().Add(c.cfg.Lease).UnixMilli(), 0))
	return &manifest.CommitterRole{ID: c.cfg.ID, URL: c.cfg.URL, UntilMs: until}
}

// holderAlive asks holder, another committer at another URL whose role has lapsed by c's
// clock, whether it still commits through journal j. It returns the role the holder vouches
// for when it does; nil when it says it does not or does not answer (then j may be sealed).
func (c *Committer) holderAlive(ctx context.Context, holder manifest.CommitterRole, j journal.ID) *manifest.CommitterRole {
	if holder.ID == "" || holder.ID == c.cfg.ID || holder.URL == "" || sameURL(holder.URL, c.cfg.URL) {
		return nil // no holder, or this committer or an earlier instance of it: nobody to ask
	}
	alive, role, err := commitclient.Probe(ctx, c.cfg.Transport, nil, holder.URL, j)
	c.m.probes.WithLabelValues(probeOutcome(alive, err)).Inc()
	if !alive {
		c.cfg.Logger.Debug("the lapsed role's holder does not hold its journal", "holder", holder.ID, "url", holder.URL, "journal", j, "err", err)
		return nil
	}
	if role.URL == "" {
		role = holder
	}
	return &role
}

func probeOutcome(alive bool, err error) string {
	switch {
	case err != nil:
		return "unanswered"
	case alive:
		return "alive"
	default:
		return "not_holder"
	}
}

// sameURL reports whether a and b name the same committer.
func sameURL(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }
