package producer

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/manifest"
)

// recover prepares a retry of group after a failed write: it drops the batches resolved
// meanwhile (a suffix), re-reads the manifest and resolves the batches it shows committed.
// It returns what is left to write; known is false when the manifest could not tell yet
// (retry), ok false when the producer stops or failed.
func (p *Producer) recover(group []*batch) (rest []*batch, known, ok bool) {
	p.mu.Lock()
	for i, b := range group {
		if b.state == stateResolved {
			group = group[:i]
			break
		}
	}
	p.mu.Unlock()
	if len(group) == 0 {
		return nil, true, true
	}
	if !p.reload() {
		return nil, false, false
	}
	rest, known = p.resolveCommitted(group)
	return rest, known, true
}

// reload reads the manifest, retrying with backoff until it succeeds. It returns false when
// the producer stops, or the stream is gone, replaced or corrupt (read corruptAttempts
// times): then every ticket has failed.
func (p *Producer) reload() bool {
	const corruptAttempts = 3
	corrupt := 0
	for attempt := 0; ; attempt++ {
		snap, err := manifest.Open(p.store, p.cfg.Stream.ManifestKey()).Load(p.ctx)
		if err == nil {
			snap, err = foldJournal(p.ctx, p.store, p.cfg.Stream.ManifestKey(), snap, p.cfg.Backoff)
		}
		if err == nil && snap.State.Generation != p.gen {
			err = manifest.ErrGenerationChanged
		}
		fatal := false
		switch {
		case err == nil:
			p.setSnap(snap)
			return true
		case p.ctx.Err() != nil:
			return false
		case errors.Is(err, manifest.ErrNotExist) || errors.Is(err, manifest.ErrGenerationChanged):
			fatal = true
		case errors.Is(err, manifest.ErrCorrupt) || errors.Is(err, manifest.ErrUnsupportedVersion):
			corrupt++
			fatal = corrupt >= corruptAttempts
		}
		p.mu.Lock()
		if fatal {
			p.failAllLocked(err)
		} else {
			p.commitErr = err
		}
		p.mu.Unlock()
		if fatal {
			return false
		}
		p.logRetry("manifest read failed, retrying", err, "attempt", attempt)
		if p.cfg.Backoff.Sleep(p.ctx, attempt) != nil {
			return false
		}
	}
}

// resolveCommitted resolves the batches of group that the manifest shows committed (a
// prefix: batches commit in order) and returns the rest. known is false when that cannot be
// told now (segments of the manifest could not be read): the batches must not be written
// again yet.
func (p *Producer) resolveCommitted(group []*batch) (rest []*batch, known bool) {
	row, ok := p.c.snap.State.Producer(p.id)
	if !ok && group[0].triedKeys != nil {
		// Our row was evicted from the bounded table: look for the entries themselves.
		var err error
		row, ok, err = p.findCommitted(group)
		if errors.Is(err, manifest.ErrCorrupt) {
			p.mu.Lock()
			p.failAllLocked(err)
			p.mu.Unlock()
			return nil, true
		}
		if err != nil {
			p.logRetry("looking up committed batches, retrying", err)
			return group, false
		}
	}
	for len(group) > 0 && ok && group[0].num <= row.LastBatch {
		p.resolveFromEntry(group[0], p.c.snap.State)
		group = group[1:]
	}
	return group, true
}

// findCommitted looks up the group's entries in the manifest (its segments included) and
// returns the producer row they imply. An entry counts only if it names an object the batch
// was written under: with a fixed producer id, an earlier run may have committed the same
// batch number.
func (p *Producer) findCommitted(group []*batch) (row manifest.ProducerState, ok bool, err error) {
	for _, b := range group {
		if b.triedKeys == nil {
			break
		}
		e, found, ferr := p.c.index.FindBatch(p.ctx, p.id, b.num)
		if ferr != nil {
			return row, ok, ferr
		}
		if !found || !b.named(e.Key) {
			break
		}
		row, ok = manifest.ProducerState{LastBatch: b.num}, true
	}
	return row, ok, nil
}

// resolveFromEntry resolves a batch committed by an earlier write from its manifest entry.
func (p *Producer) resolveFromEntry(b *batch, st *manifest.State) {
	x := p.c.index.WithState(st)
	e, found, err := x.FindBatch(p.ctx, p.id, b.num)
	for attempt := 0; err != nil && !errors.Is(err, manifest.ErrCorrupt) && attempt < 10; attempt++ {
		// Segment reads failed: retry, the batch is committed and its positions are there.
		if p.cfg.Backoff.Sleep(p.ctx, attempt) != nil {
			break
		}
		e, found, err = x.FindBatch(p.ctx, p.id, b.num)
	}
	var results []manifest.AppendResult
	foreign := err == nil && found && !b.named(e.Key)
	if err == nil && found && !foreign {
		results, err = manifest.Results(&e, b.appends)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case foreign:
		// Another process with this id committed this batch number: its positions are not
		// ours.
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
	p.recycleLocked(b)
}
