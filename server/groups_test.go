package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
)

// groupsDaemon is an access daemon with basin accessBasin holding stream "svc-a/events" of n
// records; it returns the stream's group path.
func groupsDaemon(t *testing.T, n int) (*accessDaemon, string) {
	t.Helper()
	d := startAccessDaemon(t, objectstore.NewMemStore(), &accessClock{})
	d.must(t, "create basin", d.call(t, accessRoot, "POST", "/basins", "", map[string]any{"basin": accessBasin}), 201)
	d.must(t, "create stream", d.call(t, accessRoot, "POST", "/streams", accessBasin, map[string]any{"stream": "svc-a/events"}), 201)
	for i := range n {
		d.must(t, "append", d.call(t, accessRoot, "POST", "/streams/svc-a%2Fevents/records", accessBasin, appendJSON(batchfmt.Record{Body: []byte(fmt.Sprint(i))})), 200)
	}
	return d, "/streams/svc-a%2Fevents/groups"
}

func decodeAs[T any](t *testing.T, a accessAnswer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		t.Fatalf("%s: %v", a.body, err)
	}
	return v
}

func join(t *testing.T, d *accessDaemon, path, group, start string) s2api.JoinGroupResponse {
	t.Helper()
	return decodeAs[s2api.JoinGroupResponse](t, d.must(t, "join", d.call(t, accessRoot, "POST", path+"/"+group+"/join", accessBasin, s2api.JoinGroupRequest{Start: start}), 200))
}

func TestJoinBumpsTheEpochAndResumesAtTheCheckpoint(t *testing.T) {
	d, path := groupsDaemon(t, 5)
	first := join(t, d, path, "billing", "")
	if !first.Created || first.Checkpoint != 0 || first.Epoch == 0 || len(first.Generation) != 32 {
		t.Fatalf("first join: %+v", first)
	}
	ack := decodeAs[s2api.AckGroupResponse](t, d.must(t, "ack", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: first.Epoch, Generation: first.Generation, Checkpoint: 3}), 200))
	if ack.Checkpoint != 3 {
		t.Fatalf("ack: %+v", ack)
	}
	second := join(t, d, path, "billing", "tail")
	if second.Created || second.Epoch <= first.Epoch || second.Checkpoint != 3 {
		t.Fatalf("second join: %+v after %+v", second, first)
	}
	tail := join(t, d, path, "late", "tail")
	if !tail.Created || tail.Checkpoint != 5 {
		t.Fatalf("join at the tail: %+v", tail)
	}
	list := decodeAs[s2api.ListGroupsResponse](t, d.must(t, "list", d.call(t, accessRoot, "GET", path, accessBasin, nil), 200))
	if len(list.Groups) != 2 || list.Groups[0].Group != "billing" || list.Groups[0].Checkpoint != 3 || list.Groups[0].LagRecords != 2 ||
		list.Groups[0].Epoch != second.Epoch || list.Groups[1].Group != "late" || list.Groups[1].LagRecords != 0 {
		t.Fatalf("list: %+v", list)
	}
	d.must(t, "bad start", d.call(t, accessRoot, "POST", path+"/x/join", accessBasin, `{"start":"middle"}`), 422)
	d.must(t, "missing stream", d.call(t, accessRoot, "POST", "/streams/nope/groups/x/join", accessBasin, nil), 404)
	d.must(t, "long group name", d.call(t, accessRoot, "POST", path+"/"+strings.Repeat("g", 129)+"/join", accessBasin, nil), 422)
}

func TestStaleMemberAckIsRefusedWithTheCurrentEpoch(t *testing.T) {
	d, path := groupsDaemon(t, 4)
	old := join(t, d, path, "billing", "")
	cur := join(t, d, path, "billing", "")
	a := d.must(t, "stale ack", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: old.Epoch, Generation: old.Generation, Checkpoint: 2}), 412)
	fe, ok := s2api.DecodeErrorBody(a.status, []byte(a.body)).(*s2api.GroupFencedError)
	if !ok || fe.Current != cur.Epoch || fe.Epoch != old.Epoch || fe.Group != "billing" || !strings.Contains(a.body, `"code":"group_fenced"`) {
		t.Fatalf("stale ack: %s", a.body)
	}
	// A check (a checkpoint that does not move) by the stale member is refused the same way.
	d.must(t, "stale check", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: old.Epoch, Generation: old.Generation}), 412)
	// The current member's acks move the checkpoint forward only.
	for _, c := range []struct{ to, want uint64 }{{2, 2}, {1, 2}, {4, 4}} {
		got := decodeAs[s2api.AckGroupResponse](t, d.must(t, "ack", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
			s2api.AckGroupRequest{Epoch: cur.Epoch, Generation: cur.Generation, Checkpoint: c.to}), 200))
		if got.Checkpoint != c.want {
			t.Errorf("ack to %d: checkpoint %d, want %d", c.to, got.Checkpoint, c.want)
		}
	}
	d.must(t, "past the tail", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: cur.Epoch, Generation: cur.Generation, Checkpoint: 9}), 422)
	d.must(t, "bad generation", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: cur.Epoch, Generation: "zz", Checkpoint: 1}), 422)
	other := strings.Repeat("ab", 16)
	d.must(t, "other generation", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: cur.Epoch, Generation: other, Checkpoint: 1}), 404)
}

func TestResetAndDeleteFenceTheMember(t *testing.T) {
	d, path := groupsDaemon(t, 6)
	m := join(t, d, path, "billing", "")
	two := uint64(2)
	r := decodeAs[s2api.ResetGroupResponse](t, d.must(t, "reset", d.call(t, accessRoot, "POST", path+"/billing/reset", accessBasin,
		s2api.ResetGroupRequest{SeqNum: &two}), 200))
	if r.Created || r.Checkpoint != 2 || r.Epoch <= m.Epoch || r.LagRecords != 4 {
		t.Fatalf("reset: %+v", r)
	}
	d.must(t, "ack after reset", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: m.Epoch, Generation: m.Generation, Checkpoint: 3}), 412)
	zero := uint64(0)
	n := decodeAs[s2api.ResetGroupResponse](t, d.must(t, "reset creates", d.call(t, accessRoot, "POST", path+"/fresh/reset", accessBasin,
		s2api.ResetGroupRequest{TailOffset: &zero}), 200))
	if !n.Created || n.Checkpoint != 6 {
		t.Fatalf("reset of a new group: %+v", n)
	}
	d.must(t, "reset without a target", d.call(t, accessRoot, "POST", path+"/billing/reset", accessBasin, `{}`), 422)

	m = join(t, d, path, "billing", "")
	d.must(t, "delete", d.call(t, accessRoot, "DELETE", path+"/billing", accessBasin, nil), 202)
	a := d.must(t, "ack after delete", d.call(t, accessRoot, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: m.Epoch, Generation: m.Generation, Checkpoint: 3}), 412)
	if fe, ok := s2api.DecodeErrorBody(a.status, []byte(a.body)).(*s2api.GroupFencedError); !ok || fe.Current != 0 {
		t.Fatalf("ack after delete: %s", a.body)
	}
	if a := d.must(t, "delete again", d.call(t, accessRoot, "DELETE", path+"/billing", accessBasin, nil), 404); !strings.Contains(a.body, `"code":"group_not_found"`) {
		t.Errorf("delete of a missing group: %s", a.body)
	}
}

func TestGroupCallsNeedTheirOperation(t *testing.T) {
	d, path := groupsDaemon(t, 2)
	reader := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "reader", Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", "svc-a/"), Ops: []string{"read"}}})
	appender := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "appender", Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", ""), Ops: []string{"append"}}})
	admin := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "admin", Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", ""), Ops: []string{"reconfigure-stream"}}})

	a := d.must(t, "reader joins", d.call(t, reader, "POST", path+"/billing/join", accessBasin, nil), 200)
	m := decodeAs[s2api.JoinGroupResponse](t, a)
	d.must(t, "reader acks", d.call(t, reader, "POST", path+"/billing/ack", accessBasin,
		s2api.AckGroupRequest{Epoch: m.Epoch, Generation: m.Generation, Checkpoint: 1}), 200)
	d.must(t, "reader lists", d.call(t, reader, "GET", path, accessBasin, nil), 200)
	one := uint64(1)
	refused := d.must(t, "reader resets", d.call(t, reader, "POST", path+"/billing/reset", accessBasin, s2api.ResetGroupRequest{SeqNum: &one}), 403)
	if !strings.Contains(refused.body, "reconfigure-stream") {
		t.Errorf("refusal does not name the operation: %s", refused.body)
	}
	d.must(t, "reader deletes", d.call(t, reader, "DELETE", path+"/billing", accessBasin, nil), 403)
	d.must(t, "reader on another stream", d.call(t, reader, "POST", "/streams/svc-b%2Fevents/groups/billing/join", accessBasin, nil), 403)
	d.must(t, "appender joins", d.call(t, appender, "POST", path+"/billing/join", accessBasin, nil), 403)
	d.must(t, "appender lists", d.call(t, appender, "GET", path, accessBasin, nil), 403)
	d.must(t, "admin joins", d.call(t, admin, "POST", path+"/billing/join", accessBasin, nil), 403)
	d.must(t, "admin resets", d.call(t, admin, "POST", path+"/billing/reset", accessBasin, s2api.ResetGroupRequest{SeqNum: &one}), 200)
	d.must(t, "admin deletes", d.call(t, admin, "DELETE", path+"/billing", accessBasin, nil), 202)
	d.must(t, "no token", d.call(t, "", "GET", path, accessBasin, nil), 401)
}
