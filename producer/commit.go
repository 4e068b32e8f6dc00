package producer

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// commitState is the commit goroutine's own state: the manifest as it last read or wrote it.
type commitState struct {
	snap  *manifest.Snapshot
	index *manifest.Index
	// stale: the manifest moved on since snap (a committer wrote for us): read it before
	// writing directly.
	stale bool
	// client sends commit requests to the stream's committer, and says when to commit
	// directly instead.
	client *commitclient.Client
	// pace spaces the producer's own manifest writes to the store's per-key write limit.
	pace *manifest.Pacer
}

// setSnap makes snap, just read or written, the manifest the commit loop works from.
func (p *Producer) setSnap(snap *manifest.Snapshot) {
	p.c.snap = snap
	p.c.client.Observe(snap.State.Committer)
	p.c.index = p.c.index.WithState(snap.State)
	p.tsMode.Store(uint32(snap.State.Config.Timestamping.Mode))
}

// commitLoop commits uploaded batches in batch order, every ready one (up to
// MaxGroupBatches) in one manifest write.
func (p *Producer) commitLoop() {
	defer p.wg.Done()
	for {
		// Within the store's write limit of the last manifest write, wait first: the batches
		// uploaded meanwhile join the next write.
		if p.c.pace.Wait(p.ctx) != nil {
			return
		}
		group := p.nextGroup()
		if group == nil {
			return
		}
		p.commitGroup(group)
	}
}

// nextGroup waits until the oldest pending batch is uploaded and returns it with the ready
// batches right behind it, or nil when the producer stops.
func (p *Producer) nextGroup() []*batch {
	for p.ctx.Err() == nil {
		p.mu.Lock()
		n := 0
		for n < len(p.pending) && n < p.cfg.MaxGroupBatches && p.pending[n].ready() {
			n++
		}
		group := slices.Clone(p.pending[:n])
		p.mu.Unlock()
		if n > 0 {
			return group
		}
		select {
		case <-p.kick.commit:
		case <-p.ctx.Done():
		}
	}
	return nil
}

// commitGroup commits group, retrying until every batch of it is resolved or the producer
// stops. After a failed write it reloads the manifest and first resolves the batches it
// shows committed (by producer id and batch number), so that a write whose outcome was
// unknown is never repeated. Between writes DeliveryTimeout may fail a suffix of the group.
func (p *Producer) commitGroup(group []*batch) {
	for attempt := 0; len(group) > 0; attempt++ {
		if p.ctx.Err() != nil {
			return
		}
		if attempt > 0 {
			if p.cfg.Backoff.Sleep(p.ctx, attempt-1) != nil {
				return
			}
			var known, ok bool
			if group, known, ok = p.recover(group); !ok {
				return
			}
			if !known {
				continue // cannot tell yet whether the batches are committed
			}
			if len(group) == 0 {
				return
			}
		}
		if !p.refreshStale(group) || !p.uploadCarried(group) {
			return // stopping, or a batch of the group expired: nextGroup takes what is left
		}
		if p.c.client.URL() != "" {
			if p.commitRemote(group) {
				return
			}
			continue // recover, then commit directly
		}
		if p.c.stale {
			if !p.reload() {
				return
			}
			p.c.stale = false
		}
		if !p.uploadAll(group) {
			return // stopping, or a batch of the group expired
		}
		if p.c.snap.State.Journal != nil {
			// A committer's journal holds commits of the stream: no direct write until it is
			// sealed, and only a journal whose committer's role lapsed is sealed.
			if !p.sealLapsedJournal() {
				return
			}
			continue
		}
		if p.c.pace.Wait(p.ctx) != nil {
			return
		}
		w := p.startWrite(group)
		if w == nil {
			return
		}
		group = w.group
		if !p.apply(w) {
			return
		}
		p.c.pace.Wrote()
		start := time.Now()
		wres, err := manifest.Open(p.store, p.cfg.Stream.ManifestKey()).Write(p.ctx, w.st, p.c.snap.Version)
		p.m.writeLatency.Observe(time.Since(start).Seconds())
		if err == nil {
			p.writeSucceeded(w, &wres.Snapshot)
			return
		}
		if !p.writeFailed(w, err, attempt) {
			return
		}
	}
}

// write is one manifest write attempt: the group it holds, the state it will write, and
// what applying each batch to that state gave.
type write struct {
	group   []*batch
	fresh   []*batch // sent for the first time
	skip    [][]bool // per batch, per append: an earlier append of its chain failed
	st      *manifest.State
	results []*manifest.BatchResult
}

// startWrite marks the group as held by a write (stateWriting: DeliveryTimeout leaves it
// until the write fails without effect) and takes what the write needs under one lock. The
// batches resolved meanwhile are a suffix of the group: they are left out. It returns nil
// if nothing is left.
func (p *Producer) startWrite(group []*batch) *write {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &write{}
	for _, b := range group {
		if b.state == stateResolved {
			break
		}
		if b.state == stateUploaded {
			b.to(stateWriting)
		}
		if !b.sent {
			b.sent = true
			w.fresh = append(w.fresh, b)
		}
		if !slices.Contains(b.triedKeys, b.key) {
			b.triedKeys = append(b.triedKeys, b.key)
		}
		var skip []bool
		if b.chained {
			skip = make([]bool, len(b.tickets))
			for j, t := range b.tickets {
				skip[j] = t.chain.failedBeforeLocked(p, b.num)
			}
		}
		w.group = append(w.group, b)
		w.skip = append(w.skip, skip)
	}
	if len(w.group) == 0 {
		return nil
	}
	return w
}

// apply applies the write's batches to a copy of the manifest state (manifest.State.Apply:
// conditions, seq_nums, timestamps, commands). A chained append is skipped if an earlier
// append of its chain failed, in an earlier batch or earlier in this write. A batch Apply
// refuses is a bug in this package: the producer fails rather than guess.
func (p *Producer) apply(w *write) bool {
	w.st = p.c.snap.State.Clone()
	w.results = make([]*manifest.BatchResult, len(w.group))
	var broken map[*Chain]bool
	for i, b := range w.group {
		mb := &manifest.Batch{Key: b.key, ObjectBytes: uint64(len(b.data)), ProducerID: p.id,
			BatchNum: b.num, ArrivalMs: b.arrivalMs, Appends: b.appends}
		if skip := w.skip[i]; skip != nil {
			tickets := b.tickets
			mb.Skip = func(j int) bool { return skip[j] || broken[tickets[j].chain] }
			mb.Rejected = func(j int) {
				if c := tickets[j].chain; c != nil {
					if broken == nil {
						broken = map[*Chain]bool{}
					}
					broken[c] = true
				}
			}
		}
		res, err := w.st.Apply(mb)
		if err != nil {
			p.mu.Lock()
			for _, b := range w.fresh {
				b.sent = false // nothing was sent
			}
			p.endWriteLocked(w.group, false)
			p.failAllLocked(err)
			p.mu.Unlock()
			return false
		}
		w.results[i] = res
	}
	return true
}

// endWriteLocked records that the write holding group failed: with an unknown outcome its
// batches may be in the stream (stateMaybeWritten, for good); otherwise they are back to
// uploaded, and DeliveryTimeout may fail them again.
func (p *Producer) endWriteLocked(group []*batch, unknown bool) {
	for _, b := range group {
		switch {
		case b.state == stateMaybeWritten:
		case unknown:
			b.to(stateMaybeWritten)
		default:
			b.to(stateUploaded)
		}
	}
	if !unknown && p.cfg.DeliveryTimeout > 0 {
		// The expiry timer skipped the group while the write held it.
		p.kick.wake(p.kick.expiry)
	}
}

// writeSucceeded resolves the write's batches from their results. A batch an earlier write
// of ours had committed (an unknown outcome that took effect) is resolved from its entry.
func (p *Producer) writeSucceeded(w *write, snap *manifest.Snapshot) {
	p.setSnap(snap)
	for _, b := range p.resolveWrite(w.group, w.results, w.st.Tail) {
		p.resolveFromEntry(b, w.st)
	}
}

// resolveWrite resolves the batches of a successful write from their results and returns the
// duplicates (committed by an earlier write), which the caller resolves from their entries.
func (p *Producer) resolveWrite(group []*batch, results []*manifest.BatchResult, tail Position) (dups []*batch) {
	p.m.commits.Inc()
	p.m.commitBatches.Observe(float64(len(group)))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commitErr = nil
	for i, b := range group {
		if results[i].Duplicate {
			dups = append(dups, b)
			continue
		}
		p.resolveLocked(b, results[i].Appends, tail, nil)
		p.recycleLocked(b)
	}
	return dups
}

// writeFailed records a failed write and reports whether to retry.
func (p *Producer) writeFailed(w *write, err error, attempt int) bool {
	unknown := errors.Is(err, manifest.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrOutcomeUnknown)
	p.mu.Lock()
	p.commitErr = err
	p.endWriteLocked(w.group, unknown)
	if errors.Is(err, objectstore.ErrConditionsUnsupported) {
		// Refused before anything was sent, and so will every manifest write be.
		for _, b := range w.group {
			b.sent = b.state == stateMaybeWritten
		}
		p.failAllLocked(fmt.Errorf("producer: %w", err))
		p.mu.Unlock()
		return false
	}
	p.mu.Unlock()
	kind := "other"
	switch {
	case errors.Is(err, manifest.ErrConflict):
		kind = "conflict"
	case errors.Is(err, manifest.ErrOutcomeUnknown):
		kind = "outcome_unknown"
	case errors.Is(err, objectstore.ErrThrottled):
		kind = "throttled" // refused for the store's rate: nothing written, not a lost race
	}
	p.m.commitErrors.WithLabelValues(kind).Inc()
	if kind != "conflict" {
		p.logRetry("manifest write failed, retrying", err, "kind", kind, "batches", len(w.group), "attempt", attempt)
	}
	return true
}

// refreshStale uploads again, under new keys, the batches whose upload began more than
// CommitDeadline ago: the collector may delete an unreferenced object once it is older than
// its grace period, and the deadline is at most half of it. A slow upload can age the rest
// of the group past the deadline too, so it checks until none is stale.
func (p *Producer) refreshStale(group []*batch) bool {
	for stale := true; stale; {
		stale = false
		for _, b := range group {
			if b.carried() || time.Since(b.uploadStart) <= p.cfg.CommitDeadline {
				continue // carried bytes are no object the collector could delete
			}
			stale = true
			old := b.key
			if err := p.upload(b); err != nil {
				return false // stopping, or expired
			}
			p.m.reuploads.Inc()
			// The old object is left to the collector: no write of ours references it (the
			// reload before this attempt showed the batch uncommitted).
			p.log.Info("batch passed the commit deadline, uploaded again", "batch", b.num, "old_key", old, "new_key", b.key)
			if b.reuploads++; b.reuploads == 2 {
				p.log.Warn("batch uploaded again twice: the store is slower than the commit deadline, so it may never commit; raise the collector's grace period (the commit deadline is half of it)",
					"batch", b.num, "commit_deadline", p.cfg.CommitDeadline)
			}
		}
	}
	return true
}

// sealLapsedJournal seals the journal the manifest names (manifest.Handle.SealJournal) if
// its committer's role has lapsed and the committer does not answer a probe for that
// journal (a journal committer renews no lease by writes), so that the next attempt can
// write directly. While the role is live, or its holder answers that it still commits
// through the journal, it only marks the manifest stale, and the next attempt asks the
// committer again (the probe's answer routes the client there). It returns false when the
// producer stops.
func (p *Producer) sealLapsedJournal() bool {
	p.c.stale = true
	st := p.c.snap.State
	if st.Committer.URL != "" {
		// A holder that answers is asked again at once (Probe ends the client's direct
		// window), rather than after it: while it holds the journal no direct write can.
		alive, err := p.c.client.Probe(p.ctx, st.Committer, st.Journal.ID)
		if alive {
			p.log.Info("the stream's committer still commits through its journal; asking it again", "committer", st.Committer.URL)
			return p.ctx.Err() == nil
		}
		if p.ctx.Err() != nil {
			return false
		}
		if err != nil {
			p.log.Info("the stream's committer did not answer a probe", "committer", st.Committer.URL, "err", err)
		}
	}
	if st.Committer.Live(p.cfg.Now()) {
		p.log.Info("the stream's committer holds its journal until its lease lapses; waiting", "committer", st.Committer.URL)
		return p.ctx.Err() == nil
	}
	if _, err := manifest.Open(p.store, p.cfg.Stream.ManifestKey(), manifest.WithBackoff(p.cfg.Backoff)).SealJournal(p.ctx); err != nil {
		p.logRetry("sealing the lapsed committer's journal failed, retrying", err)
	}
	return p.ctx.Err() == nil
}
