package committer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// pending is a request waiting for its stream's loop.
type pending struct {
	ctx  context.Context
	req  *wire.Request
	done chan *wire.Response // buffered: the loop never blocks on an answer
	at   time.Time
}

// stream is one stream's commit loop and the manifest as it last read or wrote it.
type stream struct {
	c     *Committer
	path  string
	m     *manifest.Handle
	queue chan *pending
	snap  *manifest.Snapshot // loop only; nil: read it first
	held  bool               // the last write took or renewed the role
	users int                // Commit calls about to queue a request (guarded by c.mu)
	pace  *manifest.Pacer    // loop only: the store's per-key write limit
}

func (s *stream) loop() {
	defer s.c.wg.Done()
	idle := time.NewTimer(s.c.cfg.IdleTimeout)
	defer idle.Stop()
	for {
		var group []*pending
		select {
		case pr := <-s.queue:
			group = append(group, pr)
			// Within the store's write limit of the last write, wait: what arrives meanwhile
			// joins this write.
			if s.pace.Wait(s.c.ctx) != nil {
				s.answerAll(group, &wire.Error{Code: wire.CodeStopping, Message: "committer closed"})
				s.drain()
				return
			}
		case <-s.c.ctx.Done():
			s.drain()
			return
		case <-idle.C:
			if s.c.retire(s) {
				return
			}
			idle.Reset(s.c.cfg.IdleTimeout)
			continue
		}
		for more := true; more; {
			select {
			case pr := <-s.queue:
				group = append(group, pr)
			default:
				more = false
			}
		}
		s.commit(group)
		idle.Reset(s.c.cfg.IdleTimeout)
	}
}

// drain answers the requests still queued at Close; none was written.
func (s *stream) drain() {
	for {
		select {
		case pr := <-s.queue:
			pr.done <- &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "committer closed"}}
		default:
			return
		}
	}
}

// commit writes group in one manifest write, retrying conflicts and failures on a fresh read
// (a batch an earlier attempt committed is then a duplicate), and answers every request.
func (s *stream) commit(group []*pending) {
	cfg := &s.c.cfg
	var lastErr error
	for attempt := 0; attempt < cfg.MaxWriteRetries; attempt++ {
		if attempt > 0 {
			if cfg.Backoff.Sleep(s.c.ctx, attempt-1) != nil {
				break
			}
		}
		group = s.dropGone(group, attempt > 0)
		if len(group) == 0 {
			return
		}
		if s.snap == nil {
			snap, err := s.m.Load(s.c.ctx)
			if errors.Is(err, manifest.ErrNotExist) {
				s.answerAll(group, &wire.Error{Code: wire.CodeGeneration, Message: err.Error()})
				return
			}
			if err != nil {
				lastErr = err
				continue
			}
			s.snap = snap
		}
		st := s.snap.State.Clone()
		prev := st.Committer
		if prev.ID != cfg.ID && prev.URL == cfg.URL {
			// An earlier instance at this URL (restarted, or crashed): nothing else can be
			// listening there, so its role is ours.
			st.ReleaseRole(prev.ID)
		}
		if err := st.TakeRole(cfg.ID, cfg.URL, cfg.Now(), cfg.Lease); err != nil {
			var held *manifest.RoleHeldError
			errors.As(err, &held)
			s.answerAll(group, &wire.Error{Code: wire.CodeRoleHeld, Message: err.Error(), Holder: &held.Holder})
			s.snap, s.held = nil, false // read again next time: the role may lapse
			return
		}
		if st.Journal != nil {
			// A journal committer (this URL's earlier instance with --journal, or one whose
			// role lapsed) left commits in its journal: seal it and fold them in first.
			if _, err := s.m.SealJournal(s.c.ctx); err != nil {
				lastErr = err
			}
			s.snap = nil
			continue
		}
		answers := make([]*wire.Response, len(group))
		batches, checkpoints, writing := 0, 0, 0
		for i, pr := range group {
			answers[i] = apply(st, pr.req)
			if answers[i].Error == nil {
				batches += len(pr.req.Batches)
				checkpoints += len(pr.req.Checkpoints)
				writing++
			}
		}
		if writing == 0 {
			s.answer(group, answers, st)
			return
		}
		if s.pace.Wait(s.c.ctx) != nil {
			break
		}
		s.pace.Wrote()
		start := time.Now()
		wres, err := s.m.Write(s.c.ctx, st, s.snap.Version)
		s.c.m.writeSeconds.Observe(time.Since(start).Seconds())
		if err == nil {
			s.snap = &wres.Snapshot
			if prev.ID != cfg.ID {
				s.c.m.roleChanges.Inc()
				cfg.Logger.Info("took the committer role", "manifest", s.path, "previous", prev.ID)
			}
			s.held = true
			s.c.m.writes.Inc()
			s.c.m.batchesPerWrite.Observe(float64(batches))
			s.c.m.checkpoints.Add(float64(checkpoints))
			s.c.m.requestsPerWrite.Observe(float64(writing))
			s.answer(group, answers, st)
			return
		}
		lastErr = err
		if errors.Is(err, objectstore.ErrThrottled) {
			// Refused for the store's rate, not a lost race: nothing was written, so the
			// version read still holds. Back off and write again.
			s.c.m.throttled.Inc()
			cfg.Logger.Warn("manifest write throttled by the store, backing off", "manifest", s.path, "attempt", attempt)
			continue
		}
		s.snap = nil
		if !errors.Is(err, manifest.ErrConflict) {
			s.c.m.writeErrors.Inc()
			cfg.Logger.Warn("manifest write failed, retrying", "manifest", s.path, "attempt", attempt, "err", err)
		}
	}
	s.snap = nil
	msg := "committer stopping"
	if lastErr != nil {
		msg = lastErr.Error()
	}
	s.answerAll(group, &wire.Error{Code: wire.CodeStorage, Message: msg})
}

// dropGone answers and drops the requests whose callers gave up or that are older than
// RequestTTL, so that no batch is committed long after its producer sent it (its object must
// not outlive the collector's grace period unreferenced). Before the first attempt none of
// them was written (wire.CodeStopping); on a retry an earlier attempt may have written them
// (wire.CodeStorage: the producer learns the outcome from the manifest).
func (s *stream) dropGone(group []*pending, retry bool) []*pending {
	code := wire.CodeStopping
	if retry {
		code = wire.CodeStorage
	}
	kept := group[:0]
	for _, pr := range group {
		err := pr.ctx.Err()
		if err == nil && time.Since(pr.at) > s.c.cfg.RequestTTL {
			err = fmt.Errorf("not written within %v", s.c.cfg.RequestTTL)
		}
		if err != nil {
			pr.done <- &wire.Response{Error: &wire.Error{Code: code, Message: "request abandoned: " + err.Error()}}
			continue
		}
		kept = append(kept, pr)
	}
	return kept
}

// answer sends each request its answer, with the tail of st where it was written.
func (s *stream) answer(group []*pending, answers []*wire.Response, st *manifest.State) {
	for i, pr := range group {
		if answers[i].Error == nil {
			answers[i].Tail = st.Tail
			role := st.Committer
			answers[i].Role = &role
		}
		s.c.m.requestSeconds.Observe(time.Since(pr.at).Seconds())
		pr.done <- answers[i]
	}
}

func (s *stream) answerAll(group []*pending, e *wire.Error) {
	for _, pr := range group {
		pr.done <- &wire.Response{Error: e}
	}
}

// apply applies req's batches to st (all or none: they are validated first, and Apply fails
// on nothing else) and returns what each gave.
func apply(st *manifest.State, req *wire.Request) *wire.Response {
	if req.Generation != st.GenerationString() {
		return &wire.Response{Error: &wire.Error{Code: wire.CodeGeneration, Message: fmt.Sprintf("the stream's generation is %s, not %s", st.GenerationString(), req.Generation)}}
	}
	batches := make([]*manifest.Batch, len(req.Batches))
	for i := range req.Batches {
		batches[i] = req.Batches[i].ManifestBatch(req.ProducerID)
		if err := batches[i].Validate(); err != nil {
			return &wire.Response{Error: &wire.Error{Code: wire.CodeInvalid, Message: err.Error()}}
		}
	}
	broken := map[int]bool{}
	out := &wire.Response{Batches: make([]wire.BatchResult, len(req.Batches))}
	for i, mb := range batches {
		b := &req.Batches[i]
		mb.Skip = func(j int) bool { a := &b.Appends[j]; return a.Skip || (a.Chain != 0 && broken[a.Chain]) }
		mb.Rejected = func(j int) {
			if c := b.Appends[j].Chain; c != 0 {
				broken[c] = true
			}
		}
		res, err := st.Apply(mb)
		if err != nil { // cannot happen after Validate
			return &wire.Response{Error: &wire.Error{Code: wire.CodeInvalid, Message: err.Error()}}
		}
		out.Batches[i] = wire.NewBatchResult(res)
	}
	for _, cp := range req.Checkpoints {
		var r wire.CheckpointResult
		_, err := st.SetCheckpoint(cp.Group, cp.Epoch, cp.SeqNum)
		var stale *manifest.StaleEpochError
		switch {
		case errors.As(err, &stale):
			r.StaleEpoch = &stale.Current
		case errors.Is(err, manifest.ErrNoGroup):
			r.NoGroup = true
		case err != nil:
			r.Error = err.Error()
		}
		r.Checkpoint = st.Groups[cp.Group].Checkpoint
		out.Checkpoints = append(out.Checkpoints, r)
	}
	return out
}

// release gives up the stream's role if the last write held it.
func (s *stream) release(ctx context.Context) error {
	if !s.held {
		return nil
	}
	id := s.c.cfg.ID
	for attempt := 0; attempt < 5; attempt++ {
		snap, err := s.m.Load(ctx)
		if err != nil || snap.State.Committer.ID != id {
			return nil // gone, or taken over: nothing to give up
		}
		st := snap.State.Clone()
		st.ReleaseRole(id)
		if _, err := s.m.Write(ctx, st, snap.Version); err == nil {
			return nil
		} else if !errors.Is(err, manifest.ErrConflict) {
			return fmt.Errorf("committer: release role of %s: %w", s.path, err)
		}
	}
	return nil
}
