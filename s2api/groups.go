package s2api

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Consumer groups are sluice's own extension of S2's API (S2's documentation has none): a
// stream's groups are listed, joined, acknowledged, reset and deleted under
// /v1/streams/{stream}/groups, with S2's headers (S2-Basin), auth and error shape.

// CodeGroupFenced is sluice's own code: an acknowledgement (or check) by a member whose
// epoch is no longer its group's, because a newer member joined, the group was reset, or
// it was deleted (current epoch 0). Sent with 412, as S2 sends its other failed
// conditions, in the body GroupFencedError describes.
const CodeGroupFenced Code = "group_fenced"

// CodeGroupNotFound is sluice's own code (404): the consumer group does not exist.
const CodeGroupNotFound Code = "group_not_found"

// GroupInfo is one consumer group: its epoch, its checkpoint (the first seq_num not
// acknowledged) and its lag (the readable records from the checkpoint to the tail, and the
// age in seconds of the oldest of them, by the daemon's clock; 0 when caught up).
type GroupInfo struct {
	Group      string  `json:"group"`
	Epoch      uint64  `json:"epoch"`
	Checkpoint uint64  `json:"checkpoint"`
	LagRecords uint64  `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
}

// ListGroupsResponse answers GET /streams/{s}/groups: every group, sorted by name.
type ListGroupsResponse struct {
	Groups []GroupInfo `json:"groups"`
}

// Where a group that a join creates starts.
const (
	GroupStartHead = "head"
	GroupStartTail = "tail"
)

// JoinGroupRequest is the body of POST /streams/{s}/groups/{g}/join. Start is where a group
// that the join creates starts: "head" (the default) or "tail"; a group that exists resumes
// from its checkpoint.
type JoinGroupRequest struct {
	Start string `json:"start,omitempty"`
}

// Validate checks Start.
func (r *JoinGroupRequest) Validate() error {
	switch r.Start {
	case "", GroupStartHead, GroupStartTail:
		return nil
	}
	return Errorf(CodeInvalid, "start %q: want %q or %q", r.Start, GroupStartHead, GroupStartTail)
}

// JoinGroupResponse is the new member's hold on its group: its epoch (every earlier member
// is fenced), the checkpoint it resumes at, whether the join created the group, and the
// stream's generation (hex), which its acknowledgements carry so that they cannot reach a
// stream of the same name created after this one was deleted.
type JoinGroupResponse struct {
	Group      string `json:"group"`
	Epoch      uint64 `json:"epoch"`
	Checkpoint uint64 `json:"checkpoint"`
	Created    bool   `json:"created"`
	Generation string `json:"generation"`
}

// AckGroupRequest is the body of POST /streams/{s}/groups/{g}/ack: move the checkpoint
// forward to Checkpoint (every record below it is acknowledged) as the member of Epoch in
// the stream's Generation. A checkpoint at or below the group's moves nothing, which makes
// the call a check that the member still holds the group.
type AckGroupRequest struct {
	Epoch      uint64 `json:"epoch"`
	Generation string `json:"generation"`
	Checkpoint uint64 `json:"checkpoint"`
}

// AckGroupResponse is the group's state after an acknowledgement.
type AckGroupResponse struct {
	Group      string `json:"group"`
	Epoch      uint64 `json:"epoch"`
	Checkpoint uint64 `json:"checkpoint"`
}

// ResetGroupRequest is the body of POST /streams/{s}/groups/{g}/reset: exactly one of
// SeqNum, Timestamp (the first record at or after it, in ms) or TailOffset (records back
// from the tail; 0 is the tail).
type ResetGroupRequest struct {
	SeqNum     *uint64 `json:"seq_num,omitempty"`
	Timestamp  *uint64 `json:"timestamp,omitempty"`
	TailOffset *uint64 `json:"tail_offset,omitempty"`
}

// Validate checks that exactly one target is given.
func (r *ResetGroupRequest) Validate() error {
	n := 0
	for _, p := range []*uint64{r.SeqNum, r.Timestamp, r.TailOffset} {
		if p != nil {
			n++
		}
	}
	if n != 1 {
		return Errorf(CodeInvalid, "give exactly one of seq_num, timestamp or tail_offset (got %d)", n)
	}
	return nil
}

// ResetGroupResponse is the group after a reset, and whether the reset created it.
type ResetGroupResponse struct {
	GroupInfo
	Created bool `json:"created"`
}

// ValidateGroupName checks a consumer group's name: 1 to MaxGroupNameLen bytes.
func ValidateGroupName(name string) error {
	if name == "" || len(name) > MaxGroupNameLen {
		return Errorf(CodeInvalid, "invalid group name %q: 1 to %d bytes", name, MaxGroupNameLen)
	}
	return nil
}

// MaxGroupNameLen bounds a consumer group's name (as package consumer does).
const MaxGroupNameLen = 128

// GroupFencedError refuses a member's call: Epoch is no longer the group's. Current is the
// group's epoch now, 0 if the group was deleted. It is sent as 412
// {"code":"group_fenced","message":…,"group":…,"epoch":…,"current_epoch":…}.
type GroupFencedError struct {
	Group   string
	Epoch   uint64
	Current uint64
}

func (e *GroupFencedError) Error() string {
	if e.Current == 0 {
		return fmt.Sprintf("group %q was deleted (member epoch %d)", e.Group, e.Epoch)
	}
	return fmt.Sprintf("group %q: member epoch %d fenced by epoch %d", e.Group, e.Epoch, e.Current)
}

// groupFencedBody is GroupFencedError's body.
type groupFencedBody struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	Group        string `json:"group"`
	Epoch        uint64 `json:"epoch"`
	CurrentEpoch uint64 `json:"current_epoch"`
}

func (e *GroupFencedError) response() (int, []byte) {
	b, _ := json.Marshal(groupFencedBody{Code: string(CodeGroupFenced), Message: e.Error(), Group: e.Group, Epoch: e.Epoch, CurrentEpoch: e.Current})
	return http.StatusPreconditionFailed, b
}

// decodeGroupFenced parses a 412 body with code group_fenced.
func decodeGroupFenced(body []byte) (*GroupFencedError, bool) {
	var b groupFencedBody
	if json.Unmarshal(body, &b) != nil || b.Code != string(CodeGroupFenced) {
		return nil, false
	}
	return &GroupFencedError{Group: b.Group, Epoch: b.Epoch, Current: b.CurrentEpoch}, true
}
