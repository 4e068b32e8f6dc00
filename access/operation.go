package access

import "fmt"

// Operation is one of S2's operations, named as S2's API names them ("list-basins",
// "append", ...).
type Operation uint8

// S2's operations. Metrics and locations are named so that a scope that lists them is
// accepted, although sluice serves no route for them.
const (
	ListBasins Operation = iota + 1
	CreateBasin
	DeleteBasin
	ReconfigureBasin
	GetBasinConfig
	IssueAccessToken
	RevokeAccessToken
	ListAccessTokens
	ListStreams
	CreateStream
	DeleteStream
	GetStreamConfig
	ReconfigureStream
	CheckTail
	Append
	Read
	Trim
	Fence
	AccountMetrics
	BasinMetrics
	StreamMetrics
	ListLocations
	GetDefaultLocation
	SetDefaultLocation

	numOps = int(SetDefaultLocation)
)

var opNames = [...]string{
	ListBasins:         "list-basins",
	CreateBasin:        "create-basin",
	DeleteBasin:        "delete-basin",
	ReconfigureBasin:   "reconfigure-basin",
	GetBasinConfig:     "get-basin-config",
	IssueAccessToken:   "issue-access-token",
	RevokeAccessToken:  "revoke-access-token",
	ListAccessTokens:   "list-access-tokens",
	ListStreams:        "list-streams",
	CreateStream:       "create-stream",
	DeleteStream:       "delete-stream",
	GetStreamConfig:    "get-stream-config",
	ReconfigureStream:  "reconfigure-stream",
	CheckTail:          "check-tail",
	Append:             "append",
	Read:               "read",
	Trim:               "trim",
	Fence:              "fence",
	AccountMetrics:     "account-metrics",
	BasinMetrics:       "basin-metrics",
	StreamMetrics:      "stream-metrics",
	ListLocations:      "list-locations",
	GetDefaultLocation: "get-default-location",
	SetDefaultLocation: "set-default-location",
}

// Operations returns every operation, in S2's order.
func Operations() []Operation {
	ops := make([]Operation, numOps)
	for i := range ops {
		ops[i] = Operation(i + 1)
	}
	return ops
}

// String is the operation's name in S2's API.
func (op Operation) String() string {
	if op.valid() {
		return opNames[op]
	}
	return fmt.Sprintf("operation(%d)", uint8(op))
}

func (op Operation) valid() bool { return op >= 1 && int(op) <= numOps }

// ParseOperation returns the operation S2 names name.
func ParseOperation(name string) (Operation, error) {
	for i, n := range opNames {
		if i > 0 && n == name {
			return Operation(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown operation %q", ErrInvalidScope, name)
}

// Group is an operation group: the level an operation acts at.
type Group uint8

// The operation groups of S2's scopes.
const (
	GroupAccount Group = iota + 1
	GroupBasin
	GroupStream
)

func (g Group) String() string {
	switch g {
	case GroupAccount:
		return "account"
	case GroupBasin:
		return "basin"
	case GroupStream:
		return "stream"
	}
	return fmt.Sprintf("group(%d)", uint8(g))
}

// Class returns the group an operation belongs to and whether it writes (else it reads).
// This is the grant of op_groups, as S2's documentation describes it: account read lists
// basins and tokens; account write creates and deletes basins and issues and revokes tokens;
// basin read gets a basin's config and lists its streams; basin write reconfigures a basin;
// stream read reads, checks the tail and gets a stream's config; stream write creates,
// deletes and reconfigures streams, appends, trims and fences.
func (op Operation) Class() (g Group, write bool) {
	switch op {
	case ListBasins, ListAccessTokens, AccountMetrics, ListLocations, GetDefaultLocation:
		return GroupAccount, false
	case CreateBasin, DeleteBasin, IssueAccessToken, RevokeAccessToken, SetDefaultLocation:
		return GroupAccount, true
	case GetBasinConfig, ListStreams, BasinMetrics:
		return GroupBasin, false
	case ReconfigureBasin:
		return GroupBasin, true
	case GetStreamConfig, CheckTail, Read, StreamMetrics:
		return GroupStream, false
	case CreateStream, DeleteStream, ReconfigureStream, Append, Trim, Fence:
		return GroupStream, true
	}
	return 0, false
}

// OpSet is a set of operations.
type OpSet uint32

// Has reports whether op is in s.
func (s OpSet) Has(op Operation) bool { return op.valid() && s&(1<<op) != 0 }

// With returns s with ops added.
func (s OpSet) With(ops ...Operation) OpSet {
	for _, op := range ops {
		if op.valid() {
			s |= 1 << op
		}
	}
	return s
}

// SubsetOf reports whether every operation of s is in t.
func (s OpSet) SubsetOf(t OpSet) bool { return s&^t == 0 }

// List returns s's operations in S2's order.
func (s OpSet) List() []Operation {
	var ops []Operation
	for _, op := range Operations() {
		if s.Has(op) {
			ops = append(ops, op)
		}
	}
	return ops
}

// AllOps is the set of every operation.
var AllOps = OpSet(0).With(Operations()...)
