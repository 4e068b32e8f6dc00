package engine

import (
	"context"
	"encoding/hex"
	"errors"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/stream"
)

// The consumer groups of a stream, for sluice's own group routes (server.GroupBackend): the
// daemon joins, acknowledges, resets and deletes with package consumer's group functions, so
// its manifest writes are a library member's (checkpoints through the stream's committer
// while one holds the role; this daemon's own, in process, when it has one).

var _ server.GroupBackend = (*s2Backend)(nil)

// groupConfig is the group config of a member of group on the stream.
func (e *Engine) groupConfig(st stream.Stream, group string) consumer.GroupConfig {
	gc := consumer.DefaultGroupConfig()
	gc.Config = e.cfg.consumerConfig(st, e.watch)
	gc.Registerer = nil // no member metrics: the daemon's lag gauges cover its streams
	gc.Group = group
	gc.Committer = e.cfg.Producer.Committer
	return gc
}

// groupErr is apiError for the group calls: a stream or group missing, a stale member.
func (e *Engine) groupErr(ctx context.Context, basin string, err error) error {
	var fe *consumer.FencedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return &s2api.GroupFencedError{Group: fe.Group, Epoch: fe.Epoch, Current: fe.Current}
	case errors.Is(err, manifest.ErrGenerationChanged):
		return &s2api.Error{Code: s2api.CodeStreamNotFound, Message: "the stream was deleted since the member joined its group", Err: err}
	case errors.Is(err, consumer.ErrGroupNotFound):
		return &s2api.Error{Code: s2api.CodeGroupNotFound, Message: "consumer group not found", Err: err}
	case errors.Is(err, consumer.ErrInvalidConfig), errors.Is(err, consumer.ErrInvalidRequest):
		return &s2api.Error{Code: s2api.CodeInvalid, Message: err.Error(), Err: err}
	case errors.Is(err, manifest.ErrNotExist):
		if berr := e.requireBasin(ctx, basin); berr != nil {
			return apiError(berr)
		}
	}
	return apiError(err)
}

func (b *s2Backend) locate(basin, name string) (stream.Stream, error) {
	st, err := stream.Locate(basin, name)
	if err != nil {
		return stream.Stream{}, apiError(err)
	}
	return st, nil
}

func groupInfo(gi consumer.GroupInfo) s2api.GroupInfo {
	return s2api.GroupInfo{Group: gi.Group, Epoch: gi.Epoch, Checkpoint: gi.Checkpoint, LagRecords: gi.Lag.Records, LagSeconds: gi.Lag.Seconds}
}

// ListGroups returns the stream's groups with their lag at the engine's clock.
func (b *s2Backend) ListGroups(ctx context.Context, basin, name string) (s2api.ListGroupsResponse, error) {
	st, err := b.locate(basin, name)
	if err != nil {
		return s2api.ListGroupsResponse{}, err
	}
	l, err := consumer.ListGroups(ctx, b.e.cfg.consumerConfig(st, b.e.watch), b.e.cfg.Now())
	if err != nil {
		return s2api.ListGroupsResponse{}, b.e.groupErr(ctx, basin, err)
	}
	out := s2api.ListGroupsResponse{Groups: make([]s2api.GroupInfo, len(l))}
	for i, gi := range l {
		out.Groups[i] = groupInfo(gi)
	}
	return out, nil
}

// JoinGroup makes the caller the group's member (consumer.JoinGroup).
func (b *s2Backend) JoinGroup(ctx context.Context, basin, name, group string, req s2api.JoinGroupRequest) (s2api.JoinGroupResponse, error) {
	st, err := b.locate(basin, name)
	if err != nil {
		return s2api.JoinGroupResponse{}, err
	}
	gc := b.e.groupConfig(st, group)
	if req.Start == s2api.GroupStartTail {
		gc.NewGroupStart = consumer.StartAtTail
	}
	m, err := consumer.JoinGroup(ctx, gc)
	if err != nil {
		return s2api.JoinGroupResponse{}, b.e.groupErr(ctx, basin, err)
	}
	return s2api.JoinGroupResponse{Group: group, Epoch: m.Epoch, Checkpoint: m.Checkpoint, Created: m.Created, Generation: hex.EncodeToString(m.Generation[:])}, nil
}

// AckGroup moves the group's checkpoint as its member (consumer.WriteCheckpoint).
func (b *s2Backend) AckGroup(ctx context.Context, basin, name, group string, req s2api.AckGroupRequest) (s2api.AckGroupResponse, error) {
	st, err := b.locate(basin, name)
	if err != nil {
		return s2api.AckGroupResponse{}, err
	}
	m := consumer.Membership{Group: group, Epoch: req.Epoch}
	gen, err := hex.DecodeString(req.Generation)
	if err != nil || len(gen) != len(m.Generation) {
		return s2api.AckGroupResponse{}, s2api.Errorf(s2api.CodeInvalid, "generation %q is not the 32 hex digits a join answered", req.Generation)
	}
	copy(m.Generation[:], gen)
	cp, err := consumer.WriteCheckpoint(ctx, b.e.groupConfig(st, group), m, req.Checkpoint)
	if err != nil {
		return s2api.AckGroupResponse{}, b.e.groupErr(ctx, basin, err)
	}
	return s2api.AckGroupResponse{Group: group, Epoch: req.Epoch, Checkpoint: cp}, nil
}

// ResetGroup moves the group's checkpoint and fences its member (consumer.ResetGroup).
func (b *s2Backend) ResetGroup(ctx context.Context, basin, name, group string, req s2api.ResetGroupRequest) (s2api.ResetGroupResponse, error) {
	st, err := b.locate(basin, name)
	if err != nil {
		return s2api.ResetGroupResponse{}, err
	}
	to := startAt(req.SeqNum, req.Timestamp, req.TailOffset, consumer.Start{})
	info, created, err := consumer.ResetGroup(ctx, b.e.cfg.consumerConfig(st, b.e.watch), group, to, b.e.cfg.Now())
	if err != nil && info.Group == "" {
		return s2api.ResetGroupResponse{}, b.e.groupErr(ctx, basin, err)
	}
	// A reset done whose lag could not be read answers without it: the reset stands.
	return s2api.ResetGroupResponse{GroupInfo: groupInfo(info), Created: created}, nil
}

// DeleteGroup removes the group and fences its member (consumer.DeleteGroup).
func (b *s2Backend) DeleteGroup(ctx context.Context, basin, name, group string) error {
	st, err := b.locate(basin, name)
	if err != nil {
		return err
	}
	return b.e.groupErr(ctx, basin, consumer.DeleteGroup(ctx, b.e.cfg.consumerConfig(st, b.e.watch), group))
}
