package access

import (
	"errors"
	"strings"
	"testing"
)

func TestGroupCallsNeedReadOrReconfigureStream(t *testing.T) {
	want := map[GroupCall]Operation{
		GroupList:   Read,
		GroupJoin:   Read,
		GroupAck:    Read,
		GroupReset:  ReconfigureStream,
		GroupDelete: ReconfigureStream,
	}
	if len(GroupCalls()) != len(want) {
		t.Fatalf("%d calls, want %d", len(GroupCalls()), len(want))
	}
	for _, c := range GroupCalls() {
		if got := c.Operation(); got != want[c] {
			t.Errorf("%v needs %v, want %v", c, got, want[c])
		}
		if g, _ := c.Operation().Class(); g != GroupStream {
			t.Errorf("%v's operation %v is not a stream operation", c, c.Operation())
		}
	}
	if GroupCall(0).Operation() != 0 || GroupCall(99).Operation() != 0 {
		t.Error("an unknown call has an operation")
	}
}

func TestCheckGroupGrantsByTheCallsOperation(t *testing.T) {
	reader := &Principal{ID: "reader", Scope: Scope{
		Basins:  AllSet,
		Streams: PrefixSet("orders"),
		Ops:     OpSet(0).With(Read),
	}}
	for _, c := range []GroupCall{GroupList, GroupJoin, GroupAck} {
		if err := reader.CheckGroup(c, "b", "orders"); err != nil {
			t.Errorf("%v refused to a reader: %v", c, err)
		}
		var re *RefusedError
		if err := reader.CheckGroup(c, "b", "payments"); !errors.As(err, &re) || re.Reason != ReasonResource {
			t.Errorf("%v on another stream: %v, want a resource refusal", c, err)
		}
	}
	for _, c := range []GroupCall{GroupReset, GroupDelete} {
		err := reader.CheckGroup(c, "b", "orders")
		var re *RefusedError
		if !errors.As(err, &re) || re.Reason != ReasonOperation {
			t.Fatalf("%v by a reader: %v, want an operation refusal", c, err)
		}
		if !strings.Contains(err.Error(), "reconfigure-stream") || !strings.Contains(err.Error(), c.String()) {
			t.Errorf("refusal %q does not name the call and its operation", err)
		}
	}
	if err := reader.CheckGroup(GroupCall(0), "b", "orders"); err == nil {
		t.Error("an unknown call was granted")
	}
	if err := RootPrincipal.CheckGroup(GroupDelete, "b", "orders"); err != nil {
		t.Errorf("root refused: %v", err)
	}
}
