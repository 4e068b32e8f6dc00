package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-dev/sluice/manifest"
)

// GroupInfo is one consumer group of a stream: its state in the manifest and its lag.
type GroupInfo struct {
	Group      string
	Epoch      uint64
	Checkpoint uint64
	Lag        Lag
}

// ListGroups returns the consumer groups of the stream cfg names,
// sorted by name, with their lag at now. Lag.Seconds is exact: where the manifest does not
// tell a record's timestamp, its batch object is read. A missing stream is ErrStreamNotFound.
func ListGroups(ctx context.Context, cfg Config, now time.Time) ([]GroupInfo, error) {
	r, err := NewReader(cfg)
	if err != nil {
		return nil, err
	}
	st, _, err := r.loadManifest(ctx, nil, "")
	if err != nil {
		return nil, err
	}
	idx := r.index(st)
	out := make([]GroupInfo, 0, len(st.Groups))
	for _, name := range slices.Sorted(maps.Keys(st.Groups)) {
		g := st.Groups[name]
		lag, err := GroupLag(ctx, idx, g.Checkpoint, now, r.RecordTimestamp)
		if err != nil {
			return nil, fmt.Errorf("consumer: lag of group %q: %w", name, err)
		}
		out = append(out, GroupInfo{Group: name, Epoch: g.Epoch, Checkpoint: g.Checkpoint, Lag: lag})
	}
	return out, nil
}

// ResetGroup moves the checkpoint of the consumer group of the stream cfg names to the start
// to, backwards or forwards, and bumps the group's epoch in the same conditional manifest
// write, so that its active
// member is fenced as by a new member: its next acknowledgement fails with *FencedError. A
// seq_num start past the tail resets to the tail, one below the first readable record to
// that record; a timestamp start resets to the first record whose timestamp is at or after
// it (the tail if none is); a tail offset counts back from the tail at the write.
//
// A group that does not exist is created there (as Kafka's reset of offsets does), with an
// epoch no earlier member of a deleted group of that name had; created reports it. A
// missing stream is ErrStreamNotFound.
func ResetGroup(ctx context.Context, cfg Config, group string, to Start, now time.Time) (info GroupInfo, created bool, err error) {
	if err := validateGroupName(group); err != nil {
		return GroupInfo{}, false, err
	}
	req := ReadRequest{Start: to}
	if err := req.Validate(); err != nil {
		return GroupInfo{}, false, err
	}
	r, err := NewReader(cfg)
	if err != nil {
		return GroupInfo{}, false, err
	}
	var seq uint64
	switch to.Kind {
	case StartSeqNum:
		seq = to.Value
	case StartTimestamp:
		if seq, err = r.firstAtOrAfter(ctx, to.Value); err != nil {
			return GroupInfo{}, false, err
		}
	}
	snap, err := manifest.Open(cfg.ObjectStore, cfg.Stream.ManifestKey(), manifest.WithBackoff(cfg.Backoff)).Update(ctx, func(st *manifest.State) error {
		_, existed := st.Groups[group]
		created = !existed
		at := seq
		if to.Kind == StartTailOffset {
			at = st.Tail.SeqNum - min(to.Value, st.Tail.SeqNum)
		}
		st.ResetGroup(group, at)
		return nil
	})
	if err != nil {
		if errors.Is(err, manifest.ErrNotExist) {
			return GroupInfo{}, false, &notFoundError{err}
		}
		return GroupInfo{}, false, fmt.Errorf("consumer: reset group %q: %w", group, err)
	}
	g := snap.State.Groups[group]
	info = GroupInfo{Group: group, Epoch: g.Epoch, Checkpoint: g.Checkpoint}
	if info.Lag, err = GroupLag(ctx, r.index(snap.State), g.Checkpoint, now, r.RecordTimestamp); err != nil {
		return info, created, fmt.Errorf("consumer: the group %q was reset; its lag: %w", group, err)
	}
	return info, created, nil
}

// firstAtOrAfter returns the seq_num of the first record whose timestamp is at or after ts
// (command records included), or the tail if there is none.
func (r *Reader) firstAtOrAfter(ctx context.Context, ts uint64) (uint64, error) {
	one := uint64(1)
	s, err := r.Open(ctx, ReadRequest{Start: AtTimestamp(ts), Count: &one})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	b, err := s.Read(ctx, 1, r.cfg.MaxBatchBytes, false)
	if err != nil && !errors.Is(err, ErrDone) {
		return 0, err
	}
	if len(b.Records) > 0 {
		return b.Records[0].SeqNum, nil
	}
	return s.Tail().SeqNum, nil
}

// DeleteGroup removes the consumer group from the stream cfg names with a conditional
// manifest write. Its active member is fenced: its next acknowledgement fails with
// *FencedError (Current 0). A group that does not exist is ErrGroupNotFound; a missing
// stream is ErrStreamNotFound.
func DeleteGroup(ctx context.Context, cfg Config, group string) error {
	if err := validateGroupName(group); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, err := manifest.Open(cfg.ObjectStore, cfg.Stream.ManifestKey(), manifest.WithBackoff(cfg.Backoff)).Update(ctx, func(st *manifest.State) error {
		if _, ok := st.Groups[group]; !ok {
			return fmt.Errorf("%w: %q: %w", ErrGroupNotFound, group, manifest.ErrNoGroup)
		}
		st.DeleteGroup(group)
		return nil
	})
	switch {
	case errors.Is(err, manifest.ErrNotExist):
		return &notFoundError{err}
	case err != nil && !errors.Is(err, ErrGroupNotFound):
		return fmt.Errorf("consumer: delete group %q: %w", group, err)
	}
	return err
}
