package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/s2api"
)

// The consumer-group calls of a daemon: sluice's own routes under /v1/streams/{s}/groups
// (docs/s2-api.md), which consume and the groups commands use through a daemon.

func groupPath(name, group string) string {
	return streamPath(name) + "/groups/" + url.PathEscape(group)
}

func (b *apiBackend) listGroups(ctx context.Context, name string) ([]s2api.GroupInfo, error) {
	var resp s2api.ListGroupsResponse
	err := b.c.call(ctx, "GET", streamPath(name)+"/groups", b.header(), nil, &resp)
	return resp.Groups, b.groupErr(name, "", err)
}

func (b *apiBackend) joinGroup(ctx context.Context, name, group, start string) (s2api.JoinGroupResponse, error) {
	var resp s2api.JoinGroupResponse
	err := b.c.call(ctx, "POST", groupPath(name, group)+"/join", b.header(), s2api.JoinGroupRequest{Start: start}, &resp)
	return resp, b.groupErr(name, group, err)
}

// ackGroup moves the group's checkpoint to cp as the member m; its errors are the daemon's
// (see groupErr).
func (b *apiBackend) ackGroup(ctx context.Context, name string, m s2api.JoinGroupResponse, cp uint64) (uint64, error) {
	var resp s2api.AckGroupResponse
	err := b.c.call(ctx, "POST", groupPath(name, m.Group)+"/ack", b.header(),
		s2api.AckGroupRequest{Epoch: m.Epoch, Generation: m.Generation, Checkpoint: cp}, &resp)
	return resp.Checkpoint, err
}

func (b *apiBackend) resetGroup(ctx context.Context, name, group string, req s2api.ResetGroupRequest) (s2api.ResetGroupResponse, error) {
	var resp s2api.ResetGroupResponse
	err := b.c.call(ctx, "POST", groupPath(name, group)+"/reset", b.header(), req, &resp)
	return resp, b.groupErr(name, group, err)
}

func (b *apiBackend) deleteGroup(ctx context.Context, name, group string) error {
	return b.groupErr(name, group, b.c.call(ctx, "DELETE", groupPath(name, group), b.header(), nil, nil))
}

// fencedFrom returns the *consumer.FencedError of a daemon's group_fenced refusal.
func fencedFrom(err error) (*consumer.FencedError, bool) {
	var gf *s2api.GroupFencedError
	if !errors.As(err, &gf) {
		return nil, false
	}
	return &consumer.FencedError{Group: gf.Group, Epoch: gf.Epoch, Current: gf.Current}, true
}

// groupErr is streamErr for the group calls: a missing group is consumer.ErrGroupNotFound, a
// stale member's refusal *consumer.FencedError; a daemon without the routes is named as such.
func (b *apiBackend) groupErr(name, group string, err error) error {
	switch {
	case err == nil:
		return nil
	case daemonCode(err) == s2api.CodeGroupNotFound:
		return fmt.Errorf("%w: %q", consumer.ErrGroupNotFound, group)
	case daemonCode(err) == s2api.CodeNotFound:
		return fmt.Errorf("%s has no consumer-group routes (an older sluice serve?): %w", b.daemon(), err)
	}
	if fe, ok := fencedFrom(err); ok {
		return fe
	}
	return b.streamErr(name, err)
}

// The groups commands through a daemon: the same output as on a store.

func groupsListDaemon(ctx context.Context, g *globals, basin, name string) error {
	b, err := newAPIBackend(g, &basin)
	if err != nil {
		return err
	}
	defer b.close()
	groups, err := b.listGroups(ctx, name)
	if err != nil {
		return err
	}
	out := newJSONOut(os.Stdout)
	for _, gi := range groups {
		if err := out.writeNoFlush(groupJSONLine(gi)); err != nil {
			return err
		}
	}
	return out.flush()
}

func groupsResetDaemon(ctx context.Context, g *globals, f *groupsResetFlags, name, group string, to consumer.Start) error {
	b, err := newAPIBackend(g, &f.basin)
	if err != nil {
		return err
	}
	defer b.close()
	var req s2api.ResetGroupRequest
	v := to.Value
	switch to.Kind {
	case consumer.StartSeqNum:
		req.SeqNum = &v
	case consumer.StartTimestamp:
		req.Timestamp = &v
	default:
		req.TailOffset = &v
	}
	r, err := b.resetGroup(ctx, name, group, req)
	if err != nil {
		return err
	}
	if r.Created {
		fmt.Fprintf(os.Stderr, "sluice: group %q did not exist in %s: created it at checkpoint %d\n", group, b.where(name), r.Checkpoint)
	}
	if to.Kind == consumer.StartSeqNum && r.Checkpoint != f.toSeqNum {
		fmt.Fprintf(os.Stderr, "sluice: seq_num %d is outside the readable records: checkpoint set to %d\n", f.toSeqNum, r.Checkpoint)
	}
	return newJSONOut(os.Stdout).write(groupJSONLine(r.GroupInfo))
}

func groupsDeleteDaemon(ctx context.Context, g *globals, basin, name, group string) error {
	b, err := newAPIBackend(g, &basin)
	if err != nil {
		return err
	}
	defer b.close()
	err = b.deleteGroup(ctx, name, group)
	if errors.Is(err, consumer.ErrGroupNotFound) {
		return fmt.Errorf("%s has no consumer group %q (sluice groups list %s shows its groups)", b.where(name), group, shellQuote(name))
	}
	return err
}
