package producer

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/manifest"
)

// committerURL is where to send the next commit: the stream's live committer, else
// Config.Committer; "" to commit directly (none, or one failed less than directFor ago).
func (p *Producer) committerURL() string {
	if time.Now().Before(p.c.directUntil) {
		return ""
	}
	role := p.c.snap.State.Committer
	if p.c.role.UntilMs > role.UntilMs {
		role = p.c.role // renewed since the snapshot, as the committer's last answer said
	}
	return committer.URL(role, p.cfg.Committer, p.cfg.Now())
}

// commitRemote sends the group to the committer at url and resolves it from the answer. It
// returns false when the committer did not commit it: the batches are back to uploaded (or
// maybe-written, when the committer may have written them), and the producer commits
// directly for a while.
func (p *Producer) commitRemote(group []*batch, url string) bool {
	w := p.startWrite(group)
	if w == nil {
		return true
	}
	req := p.request(w)
	resp, err := p.askCommitter(url, req)
	if err == nil && resp.Error != nil && resp.Error.Code == committer.CodeRoleHeld && resp.Error.Holder != nil && resp.Error.Holder.URL != url {
		resp, err = p.askCommitter(resp.Error.Holder.URL, req) // the role moved: ask its holder once
	}
	if results, ok := answered(w.group, resp, err); ok {
		if resp.Role != nil {
			p.c.role = *resp.Role
		}
		p.m.forwarded.WithLabelValues("ok").Inc()
		p.remoteSucceeded(w.group, results, resp.Tail)
		return true
	}
	p.m.forwarded.WithLabelValues("failed").Inc()
	// Nothing was committed if the request never arrived or the committer said so; after
	// anything else a write that held it may have taken effect.
	known := errors.Is(err, committer.ErrUnreachable) || (err == nil && resp.Error != nil && resp.Error.Code != committer.CodeStorage)
	if err == nil {
		if resp.Error != nil {
			err = resp.Error
		} else {
			err = errors.New("committer: an answer that does not fit the request")
		}
	}
	p.mu.Lock()
	p.commitErr = err
	p.endWriteLocked(w.group, !known)
	p.mu.Unlock()
	p.c.directUntil = time.Now().Add(committer.DirectFor)
	p.c.stale = true
	p.logRetry("committer failed, committing directly", err, "committer", url, "batches", len(w.group), "outcome_known", known)
	return false
}

func (p *Producer) askCommitter(url string, req *committer.Request) (*committer.Response, error) {
	ctx, cancel := context.WithTimeout(p.ctx, committer.RequestTimeout)
	defer cancel()
	return p.c.client.Commit(ctx, url, req)
}

// request is the commit request of w's batches.
func (p *Producer) request(w *write) *committer.Request {
	req := &committer.Request{ManifestPath: p.cfg.ManifestPath, Generation: hex.EncodeToString(p.gen[:]), ProducerID: p.id}
	chains := map[*Chain]int{}
	for i, b := range w.group {
		mb := &manifest.Batch{Key: b.key, ObjectBytes: uint64(len(b.data)), BatchNum: b.num, ArrivalMs: b.arrivalMs, Appends: b.appends}
		var ids []int
		if b.chained {
			ids = make([]int, len(b.tickets))
			for j, t := range b.tickets {
				if t.chain == nil {
					continue
				}
				id, ok := chains[t.chain]
				if !ok {
					id = len(chains) + 1
					chains[t.chain] = id
				}
				ids[j] = id
			}
		}
		req.Batches = append(req.Batches, committer.NewBatch(mb, w.skip[i], ids))
	}
	return req
}

// answered returns the committer's answer as the results of a write of group, or false if it
// is an error or does not fit the request (then the outcome is unknown).
func answered(group []*batch, resp *committer.Response, err error) ([]*manifest.BatchResult, bool) {
	if err != nil || resp.Error != nil || len(resp.Batches) != len(group) {
		return nil, false
	}
	results := make([]*manifest.BatchResult, len(group))
	for i, b := range group {
		br := &resp.Batches[i]
		results[i] = &manifest.BatchResult{Duplicate: br.Duplicate}
		if br.Duplicate {
			continue
		}
		if len(br.Appends) != len(b.tickets) {
			return nil, false
		}
		results[i].Appends = make([]manifest.AppendResult, len(br.Appends))
		for k, a := range br.Appends {
			results[i].Appends[k] = manifest.AppendResult{Start: a.Start, End: a.End}
			if a.Rejection != nil {
				results[i].Appends[k].Err = a.Rejection.Err()
			}
		}
	}
	return results, true
}

// remoteSucceeded resolves group from the committer's results; a duplicate (committed by an
// earlier request whose answer was lost) is resolved from its manifest entry.
func (p *Producer) remoteSucceeded(group []*batch, results []*manifest.BatchResult, tail Position) {
	dups := p.resolveWrite(group, results, tail)
	p.c.stale = true // the manifest moved on without us
	if len(dups) > 0 && p.reload() {
		p.c.stale = false
		for _, b := range dups {
			p.resolveFromEntry(b, p.c.snap.State)
		}
	}
}
