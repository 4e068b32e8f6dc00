package access

import "fmt"

// GroupCall is one of sluice's consumer-group calls, which S2's API does not have (sluice's
// own routes under /v1/streams/{stream}/groups). A token's scope grants one through the S2
// operation the call needs on the stream (Operation), so that scopes stay S2's.
type GroupCall uint8

// The consumer-group calls.
const (
	GroupList   GroupCall = iota + 1 // GET .../groups: each group's epoch, checkpoint and lag
	GroupJoin                        // POST .../groups/{g}/join: become the group's member
	GroupAck                         // POST .../groups/{g}/ack: move the checkpoint as the member
	GroupReset                       // POST .../groups/{g}/reset: move the checkpoint, fence the member
	GroupDelete                      // DELETE .../groups/{g}: remove the group, fence the member

	numGroupCalls = int(GroupDelete)
)

// groupCallOps is the table: a member's calls and the listing need read (a group's
// checkpoint is its reader's own position, and a token that may read the stream may read it
// from any seq_num anyway); reset and delete change what every member of the group gets, as
// the stream's other settings do, and need reconfigure-stream.
var groupCallOps = [...]struct {
	name string
	op   Operation
}{
	GroupList:   {"list", Read},
	GroupJoin:   {"join", Read},
	GroupAck:    {"ack", Read},
	GroupReset:  {"reset", ReconfigureStream},
	GroupDelete: {"delete", ReconfigureStream},
}

// GroupCalls returns every consumer-group call.
func GroupCalls() []GroupCall {
	calls := make([]GroupCall, numGroupCalls)
	for i := range calls {
		calls[i] = GroupCall(i + 1)
	}
	return calls
}

func (c GroupCall) valid() bool { return c >= 1 && int(c) <= numGroupCalls }

// Operation is the S2 operation a scope must grant on the stream for the call.
func (c GroupCall) Operation() Operation {
	if !c.valid() {
		return 0
	}
	return groupCallOps[c].op
}

func (c GroupCall) String() string {
	if !c.valid() {
		return fmt.Sprintf("group-call(%d)", uint8(c))
	}
	return "group " + groupCallOps[c].name
}

// CheckGroup checks that p may make the group call on the stream basin/name.
func (p *Principal) CheckGroup(c GroupCall, basin, name string) error {
	if !c.valid() {
		return &RefusedError{Reason: ReasonOperation, Msg: "unknown consumer-group call " + c.String()}
	}
	err := p.CheckStream(c.Operation(), basin, name)
	if re, ok := err.(*RefusedError); ok {
		return &RefusedError{Reason: re.Reason, Msg: re.Msg + " (" + c.String() + " needs " + c.Operation().String() + ")"}
	}
	return err
}
