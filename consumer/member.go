package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
)

// Membership is a group member's hold on its group as JoinGroup gives it, for a member that
// reads elsewhere (a daemon's group routes serve one): Open makes the same join for a
// Consumer.
type Membership struct {
	Group      string
	Epoch      uint64   // the member's epoch; every earlier member is fenced
	Checkpoint uint64   // the group's checkpoint at the join: where the member resumes
	Created    bool     // the join created the group (at cfg.NewGroupStart)
	Generation [16]byte // the stream generation whose group the member joined
}

// JoinGroup joins the consumer group cfg.Group as Open does, with the same conditional
// manifest write (the group is created if needed, at cfg.NewGroupStart; its epoch is bumped,
// which fences the previous member), but reads nothing. A missing stream is
// ErrStreamNotFound.
func JoinGroup(ctx context.Context, cfg GroupConfig) (Membership, error) {
	cfg.Config = cfg.Config.withNilDefaults()
	if err := cfg.Validate(); err != nil {
		return Membership{}, err
	}
	m := Membership{Group: cfg.Group}
	snap, err := manifest.Open(cfg.ObjectStore, cfg.Stream.ManifestKey(), manifest.WithBackoff(cfg.Backoff)).Update(ctx, func(st *manifest.State) error {
		_, existed := st.Groups[cfg.Group]
		m.Created = !existed
		m.Epoch = st.OpenGroup(cfg.Group)
		if !existed && cfg.NewGroupStart == StartAtTail {
			g := st.Groups[cfg.Group]
			g.Checkpoint = st.Tail.SeqNum
			st.Groups[cfg.Group] = g
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			return Membership{}, &notFoundError{err}
		}
		return Membership{}, fmt.Errorf("consumer: open group %q: %w", cfg.Group, err)
	}
	m.Checkpoint = snap.State.Groups[cfg.Group].Checkpoint
	m.Generation = snap.State.Generation
	cfg.Logger.Info("joined consumer group", "group", cfg.Group, "epoch", m.Epoch, "checkpoint", m.Checkpoint)
	return m, nil
}

// WriteCheckpoint moves the checkpoint of m's group forward to seq as its member, the way a
// Consumer's acknowledgements are written: through the stream's committer (cfg.Committer;
// the one the manifest names while it is live) with its next commit, or directly with a
// conditional manifest write when none answers. A seq at or below the group's checkpoint
// writes nothing: the call then only checks that m still holds the group. It returns the
// group's checkpoint after the call.
//
// A member that no longer holds the group gets *FencedError (Current 0: the group was
// deleted); one whose stream was deleted (or replaced by a new generation) an error matching
// manifest.ErrGenerationChanged; a seq past the tail ErrInvalidRequest.
func WriteCheckpoint(ctx context.Context, cfg GroupConfig, m Membership, seq uint64) (uint64, error) {
	cfg.Config = cfg.Config.withNilDefaults()
	cfg.Group = m.Group
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	h := manifest.Open(cfg.ObjectStore, cfg.Stream.ManifestKey(), manifest.WithBackoff(cfg.Backoff))
	snap, err := h.Load(ctx)
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			return 0, m.gone(cfg)
		}
		return 0, err
	}
	if err := m.check(cfg, snap.State); err != nil {
		return 0, err
	}
	cur := snap.State.Groups[m.Group].Checkpoint
	if seq <= cur {
		return cur, nil
	}
	if tail := snap.State.Tail.SeqNum; seq > tail {
		return 0, fmt.Errorf("%w: checkpoint %d of group %q is past the tail %d", ErrInvalidRequest, seq, m.Group, tail)
	}
	cc, err := commitclient.New(cfg.Committer)
	if err != nil {
		return 0, err
	}
	cc.Observe(snap.State.Committer)
	if cp, done, err := m.writeVia(ctx, cfg, cc, seq); done {
		return cp, err
	}
	res, err := writeCheckpointDirect(ctx, h, m.Generation, m.Group, m.Epoch, seq)
	switch {
	case err != nil:
		return 0, fmt.Errorf("consumer: write checkpoint of group %q: %w", m.Group, err)
	case res.gone:
		return 0, m.gone(cfg)
	case res.fenced:
		return 0, &FencedError{Group: m.Group, Epoch: m.Epoch, Current: res.current}
	}
	snap = res.snap
	return snap.State.Groups[m.Group].Checkpoint, nil
}

// writeVia asks the committer to write the checkpoint, as Consumer.flushVia does; done is
// false when the caller is to write it directly.
func (m Membership) writeVia(ctx context.Context, cfg GroupConfig, cc *commitclient.Client, seq uint64) (cp uint64, done bool, err error) {
	req := &wire.Request{ManifestPath: cfg.Stream.ManifestKey(), Generation: wire.Generation(m.Generation),
		Checkpoints: []wire.Checkpoint{{Group: m.Group, Epoch: m.Epoch, SeqNum: seq}}}
	resp, err := cc.Commit(ctx, req)
	var refused *wire.Error
	switch {
	case errors.As(err, &refused) && refused.Code == wire.CodeGeneration:
		return 0, true, m.gone(cfg)
	case errors.Is(err, commitclient.ErrDirect):
		return 0, false, nil
	case err != nil:
		cfg.Logger.Warn("committer failed; writing the checkpoint directly", "group", m.Group, "err", err)
		return 0, false, nil
	}
	r := resp.Checkpoints[0]
	switch {
	case r.StaleEpoch != nil:
		return 0, true, &FencedError{Group: m.Group, Epoch: m.Epoch, Current: *r.StaleEpoch}
	case r.NoGroup:
		return 0, true, &FencedError{Group: m.Group, Epoch: m.Epoch}
	case r.Error != "":
		return 0, true, errors.New("consumer: write checkpoint of group " + m.Group + ": " + r.Error)
	}
	return r.Checkpoint, true, nil
}

// check reports whether m still holds its group in st.
func (m Membership) check(cfg GroupConfig, st *manifest.State) error {
	if st.Generation != m.Generation {
		return m.gone(cfg)
	}
	g, ok := st.Groups[m.Group]
	if !ok {
		return &FencedError{Group: m.Group, Epoch: m.Epoch}
	}
	if g.Epoch != m.Epoch {
		return &FencedError{Group: m.Group, Epoch: m.Epoch, Current: g.Epoch}
	}
	return nil
}

func (m Membership) gone(cfg GroupConfig) error {
	return fmt.Errorf("consumer: group %q: %w: %s", m.Group, manifest.ErrGenerationChanged, cfg.Stream.ManifestKey())
}
