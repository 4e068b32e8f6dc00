package producer

import (
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
)

// commitRemote sends the group to the stream's committer (the commit client's route) and
// resolves it from the answer. It returns false when the committer did not commit it: the
// batches are back to uploaded (or maybe-written, when the committer may have written
// them), and the client routes the next commits directly for a while.
func (p *Producer) commitRemote(group []*batch) bool {
	w := p.startWrite(group)
	if w == nil {
		return true
	}
	req := p.request(w)
	resp, err := p.c.client.Commit(p.ctx, req)
	if err == nil {
		p.m.forwarded.WithLabelValues("ok").Inc()
		results := make([]*manifest.BatchResult, len(resp.Batches))
		for i := range resp.Batches {
			results[i] = resp.Batches[i].ManifestResult()
		}
		p.remoteSucceeded(w.group, results, resp.Tail)
		return true
	}
	p.m.forwarded.WithLabelValues("failed").Inc()
	// Nothing was committed if the request never arrived or the committer said so; after
	// anything else a write that held it may have taken effect.
	unknown := commitclient.OutcomeUnknown(err)
	p.mu.Lock()
	p.commitErr = err
	p.endWriteLocked(w.group, unknown)
	p.mu.Unlock()
	p.c.stale = true
	p.logRetry("committer failed, committing directly", err, "batches", len(w.group), "outcome_known", !unknown)
	return false
}

// request is the commit request of w's batches.
func (p *Producer) request(w *write) *wire.Request {
	req := &wire.Request{ManifestPath: p.cfg.Stream.ManifestKey(), Generation: wire.Generation(p.gen), ProducerID: p.id}
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
		wb := wire.NewBatch(mb, w.skip[i], ids)
		if b.carried() {
			wb.Data = b.data // for the journal committer in this process (commitclient refuses others)
		}
		req.Batches = append(req.Batches, wb)
	}
	return req
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
