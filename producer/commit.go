package producer

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// commitLoop is the one committer: it commits uploaded batches in batch order, every ready
// one (up to MaxGroupBatches) in one manifest write.
func (p *Producer) commitLoop() {
	defer p.wg.Done()
	for {
		group := p.nextGroup()
		if group == nil {
			return
		}
		p.commitGroup(group)
	}
}

// nextGroup waits for the oldest pending batch to be uploaded and returns it with the
// uploaded batches that follow it, or nil when the producer stops.
func (p *Producer) nextGroup() []*batch {
	for {
		if p.ctx.Err() != nil {
			// Stopping: commitGroup would return at once, so returning a group here would
			// spin (Close waits for this loop with uploaded batches still pending).
			return nil
		}
		p.mu.Lock()
		n := 0
		for n < len(p.pending) && n < p.cfg.MaxGroupBatches && p.pending[n].uploaded {
			n++
		}
		group := append([]*batch(nil), p.pending[:n]...)
		p.mu.Unlock()
		if n > 0 {
			return group
		}
		select {
		case <-p.comKick:
		case <-p.ctx.Done():
			return nil
		}
	}
}

// commitGroup commits group, retrying until every batch of it is resolved or the producer
// stops. After any failed write it reloads the manifest and, before anything else, resolves
// the batches the manifest shows committed (by producer id and batch number): so a write
// whose outcome was unknown is never repeated. Between writes, DeliveryTimeout may fail the
// group's batches that no write may have committed (a suffix of it: see expireLocked); they
// leave the group before anything else is done with it.
func (p *Producer) commitGroup(group []*batch) {
	for attempt := 0; len(group) > 0; attempt++ {
		if p.ctx.Err() != nil {
			return
		}
		if attempt > 0 {
			if p.cfg.Backoff.Sleep(p.ctx, attempt-1) != nil {
				return
			}
			if group = p.unexpired(group); len(group) == 0 {
				return
			}
			if !p.reload() {
				return
			}
			var known bool
			if group, known = p.resolveCommitted(group); !known {
				continue // cannot tell yet whether the batches are committed: retry
			}
			if len(group) == 0 {
				return
			}
		}
		if !p.refreshStale(group) {
			return // stopping, or a batch of the group expired: nextGroup takes what is left
		}
		// From here a manifest write holds the group (inWrite), and DeliveryTimeout does not
		// fail it until the write has failed without effect. Batches that failed with it
		// meanwhile are a suffix of the group: leave them out.
		p.mu.Lock()
		var fresh []*batch // held by a write for the first time
		for i, b := range group {
			if b.expired {
				group = group[:i]
				break
			}
			if !b.attempted {
				fresh = append(fresh, b)
			}
			b.attempted, b.inWrite = true, true
			if !slices.Contains(b.triedKeys, b.key) {
				b.triedKeys = append(b.triedKeys, b.key)
			}
		}
		p.mu.Unlock()
		if len(group) == 0 {
			return
		}
		st := p.snap.State.Clone()
		results := make([]*manifest.BatchResult, len(group))
		// Chains (AppendChained): an append is applied only if no earlier append of its
		// chain failed, in earlier batches (Chain.failedBeforeLocked) or earlier in this
		// commit (broken).
		var broken map[*Chain]bool
		for i, b := range group {
			mb := &manifest.Batch{Key: b.key, ObjectBytes: uint64(len(b.data)), ProducerID: p.id,
				BatchNum: b.num, ArrivalMs: b.arrivalMs, Appends: b.appends}
			if b.chained {
				tickets, num := b.tickets, b.num
				mb.Skip = func(j int) bool {
					c := tickets[j].chain
					if c == nil {
						return false
					}
					p.mu.Lock()
					before := c.failedBeforeLocked(p, num)
					p.mu.Unlock()
					return before || broken[c]
				}
				mb.Rejected = func(j int) {
					if c := tickets[j].chain; c != nil {
						if broken == nil {
							broken = map[*Chain]bool{}
						}
						broken[c] = true
					}
				}
			}
			res, err := st.Apply(mb)
			if err != nil {
				// A malformed batch is a bug in this package; fail everything rather than guess.
				p.mu.Lock()
				for _, b := range fresh {
					b.attempted = false // nothing was written: not ErrOutcomeUnknown
				}
				for _, b := range group {
					b.inWrite = false
				}
				p.failAllLocked(err)
				p.mu.Unlock()
				return
			}
			results[i] = res
		}
		start := time.Now()
		wres, err := manifest.Write(p.ctx, p.store, p.cfg.ManifestPath, st, p.snap.Version)
		p.m.writeLatency.Observe(time.Since(start).Seconds())
		p.mu.Lock()
		p.commitErr = err
		if err != nil {
			// A write that failed with a known outcome (a conflict, a refusal) wrote nothing;
			// one whose outcome is unknown may have committed the group, which then never
			// expires (resolveCommitted finds out).
			unknown := errors.Is(err, manifest.ErrOutcomeUnknown) || errors.Is(err, objectstore.ErrOutcomeUnknown)
			for _, b := range group {
				b.inWrite = false
				b.maybeWritten = b.maybeWritten || unknown
			}
			if !unknown && p.cfg.DeliveryTimeout > 0 {
				// The group is no longer held: DeliveryTimeout may fail it now, and the
				// expiry timer, which skipped it while the write held it, may be off.
				select {
				case p.expKick <- struct{}{}:
				default:
				}
			}
		}
		p.mu.Unlock()
		if err == nil {
			p.snap = &wres.Snapshot
			p.index = p.index.WithState(p.snap.State)
			p.tsMode.Store(uint32(st.Config.Timestamping.Mode))
			p.m.commits.Inc()
			p.m.commitBatches.Observe(float64(len(group)))
			for i, b := range group {
				if results[i].Duplicate {
					// Committed by an earlier write of ours: rebuild from the entry.
					p.resolveFromEntry(b, st)
					continue
				}
				p.mu.Lock()
				p.resolveLocked(b, results[i].Appends, st.Tail, nil)
				p.removePendingLocked(b)
				p.recycleLocked(b)
				p.mu.Unlock()
			}
			return
		}
		if errors.Is(err, objectstore.ErrConditionsUnsupported) {
			// Refused before anything was sent, and so will every manifest write be.
			p.mu.Lock()
			for _, b := range group {
				if !b.maybeWritten {
					b.attempted = false // no write of it may have landed: not ErrOutcomeUnknown
				}
			}
			p.failAllLocked(fmt.Errorf("producer: %w", err))
			p.mu.Unlock()
			return
		}
		kind := "other"
		switch {
		case errors.Is(err, manifest.ErrConflict):
			kind = "conflict"
		case errors.Is(err, manifest.ErrOutcomeUnknown):
			kind = "outcome_unknown"
		}
		p.m.commitErrors.WithLabelValues(kind).Inc()
		if kind != "conflict" {
			p.logRetry("manifest write failed, retrying", err, "kind", kind, "batches", len(group), "attempt", attempt)
		}
	}
}

// reload reads the manifest, retrying failures with backoff until it succeeds; it returns
// false when the producer stops or the stream is gone or corrupt (then every ticket has
// failed). A corrupt manifest is read corruptAttempts times before the producer gives up.
func (p *Producer) reload() bool {
	const corruptAttempts = 3
	corrupt := 0
	for attempt := 0; ; attempt++ {
		snap, err := manifest.Load(p.ctx, p.store, p.cfg.ManifestPath)
		if err == nil && snap.State.Generation != p.gen {
			err = manifest.ErrGenerationChanged
		}
		switch {
		case err == nil:
			p.snap = snap
			p.index = p.index.WithState(snap.State)
			p.tsMode.Store(uint32(snap.State.Config.Timestamping.Mode))
			return true
		case p.ctx.Err() != nil:
			return false
		case errors.Is(err, manifest.ErrNotExist) || errors.Is(err, manifest.ErrGenerationChanged):
			p.mu.Lock()
			p.failAllLocked(err)
			p.mu.Unlock()
			return false
		case errors.Is(err, manifest.ErrCorrupt) || errors.Is(err, manifest.ErrUnsupportedVersion):
			if corrupt++; corrupt >= corruptAttempts {
				p.mu.Lock()
				p.failAllLocked(err)
				p.mu.Unlock()
				return false
			}
		}
		p.mu.Lock()
		p.commitErr = err
		p.mu.Unlock()
		p.logRetry("manifest read failed, retrying", err, "attempt", attempt)
		if p.cfg.Backoff.Sleep(p.ctx, attempt) != nil {
			return false
		}
	}
}

// resolveCommitted resolves the batches of group that the current manifest shows committed
// and returns the rest. Batches commit in order, so the committed ones are a prefix. known is
// false when that cannot be told now (segments of the manifest could not be read): nothing
// was resolved and the batches must not be written again yet.
func (p *Producer) resolveCommitted(group []*batch) (rest []*batch, known bool) {
	row, ok := p.snap.State.Producer(p.id)
	if !ok && len(group) > 0 && group[0].attempted {
		// Our row was evicted from the table (it is bounded): look for the entry itself. It
		// must name an object this batch was written under: with a fixed producer id, an
		// earlier run (whose row is gone too) may have committed the same batch number.
		var ferr error
		own := func(b *batch) bool {
			e, found, err := p.index.FindBatch(p.ctx, p.id, b.num)
			if err != nil {
				ferr = err
			}
			return err == nil && found && slices.Contains(b.triedKeys, e.Key)
		}
		if own(group[0]) {
			row, ok = manifest.ProducerState{LastBatch: group[0].num}, true
			for _, b := range group[1:] {
				if !b.attempted || !own(b) {
					break
				}
				row.LastBatch = b.num
			}
		}
		if errors.Is(ferr, manifest.ErrCorrupt) {
			p.mu.Lock()
			p.failAllLocked(ferr)
			p.mu.Unlock()
			return nil, true
		}
		if ferr != nil {
			p.logRetry("looking up committed batches, retrying", ferr)
			return group, false
		}
	}
	for len(group) > 0 && ok && group[0].num <= row.LastBatch {
		p.resolveFromEntry(group[0], p.snap.State)
		group = group[1:]
	}
	return group, true
}

// resolveFromEntry resolves a batch committed by an earlier write from its manifest entry.
func (p *Producer) resolveFromEntry(b *batch, st *manifest.State) {
	x := p.index.WithState(st)
	e, found, err := x.FindBatch(p.ctx, p.id, b.num)
	for attempt := 0; err != nil && !errors.Is(err, manifest.ErrCorrupt) && attempt < 10; attempt++ {
		// Segment reads failed: retry, the batch is committed and its positions are there.
		if p.cfg.Backoff.Sleep(p.ctx, attempt) != nil {
			break
		}
		e, found, err = x.FindBatch(p.ctx, p.id, b.num)
	}
	var results []manifest.AppendResult
	foreign := err == nil && found && !slices.Contains(b.triedKeys, e.Key)
	if err == nil && found && !foreign {
		results, err = manifest.Results(&e, b.appends)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case foreign:
		// The entry under our id and batch number names an object we never wrote it under:
		// another process with this id committed it (a fixed ProducerID reused too soon).
		// Its positions are not ours; say so rather than ack them.
		p.log.Error("an entry under this producer id and batch number is not ours", "batch", b.num, "key", e.Key)
		p.resolveLocked(b, nil, Position{}, fmt.Errorf("%w: batch %d, entry for object %s", ErrProducerIDReused, b.num, e.Key))
	case err != nil:
		p.log.Error("rebuilding acks of a committed batch", "batch", b.num, "err", err)
		p.resolveLocked(b, nil, Position{}, errors.Join(ErrPositionsUnavailable, err))
	case !found:
		p.resolveLocked(b, nil, Position{}, ErrPositionsUnavailable)
	default:
		p.resolveLocked(b, results, st.Tail, nil)
	}
	p.removePendingLocked(b)
	p.recycleLocked(b)
}

func (p *Producer) removePendingLocked(b *batch) {
	for i, x := range p.pending {
		if x == b {
			p.pending = append(p.pending[:i:i], p.pending[i+1:]...)
			return
		}
	}
}

// refreshStale uploads again, under new keys, the batches whose upload began more than
// CommitDeadline ago: the collector may delete an unreferenced object once it is older than
// its grace period, and the deadline is at most half of it. A slow upload can age the other
// batches of the group (and its own new object) past the deadline, so it checks them all
// again until none is stale.
func (p *Producer) refreshStale(group []*batch) bool {
	for stale := true; stale; {
		stale = false
		for _, b := range group {
			if time.Since(b.uploadStart) <= p.cfg.CommitDeadline {
				continue
			}
			stale = true
			old := b.key
			if err := p.upload(b); err != nil {
				return false // aborted, or expired (DeliveryTimeout): the committer goes on with what is left
			}
			p.m.reuploads.Inc()
			// The old object is left to the collector: no write of ours references it (the
			// reload before this attempt showed the batch uncommitted).
			p.log.Info("batch passed the commit deadline, uploaded again", "batch", b.num, "old_key", old, "new_key", b.key)
		}
	}
	return true
}

// unexpired returns group without the batches DeliveryTimeout failed (a suffix of it).
func (p *Producer) unexpired(group []*batch) []*batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range group {
		if b.expired {
			return group[:i]
		}
	}
	return group
}
