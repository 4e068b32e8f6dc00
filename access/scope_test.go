package access

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/s2api"
)

func TestResourceSetMatchesExactPrefixAndEmpty(t *testing.T) {
	cases := []struct {
		set  ResourceSet
		name string
		want bool
	}{
		{ExactSet("orders"), "orders", true},
		{ExactSet("orders"), "orders2", false},
		{ExactSet("orders"), "order", false},
		{ExactSet(""), "", false}, // S2: an empty exact name matches nothing
		{ExactSet(""), "anything", false},
		{ResourceSet{}, "anything", false}, // an absent set matches nothing
		{PrefixSet("svc-a/"), "svc-a/events", true},
		{PrefixSet("svc-a/"), "svc-a/", true},
		{PrefixSet("svc-a/"), "svc-a", false},
		{PrefixSet("svc-a/"), "svc-b/events", false},
		{PrefixSet(""), "", true}, // the empty prefix matches all
		{PrefixSet(""), "x", true},
	}
	for _, c := range cases {
		if got := c.set.Matches(c.name); got != c.want {
			t.Errorf("%v.Matches(%q) = %v, want %v", c.set, c.name, got, c.want)
		}
	}
}

func TestOperationsHaveS2NamesAndOneGroup(t *testing.T) {
	want := map[Operation]struct {
		name  string
		group Group
		write bool
	}{
		ListBasins:         {"list-basins", GroupAccount, false},
		CreateBasin:        {"create-basin", GroupAccount, true},
		DeleteBasin:        {"delete-basin", GroupAccount, true},
		ReconfigureBasin:   {"reconfigure-basin", GroupBasin, true},
		GetBasinConfig:     {"get-basin-config", GroupBasin, false},
		IssueAccessToken:   {"issue-access-token", GroupAccount, true},
		RevokeAccessToken:  {"revoke-access-token", GroupAccount, true},
		ListAccessTokens:   {"list-access-tokens", GroupAccount, false},
		ListStreams:        {"list-streams", GroupBasin, false},
		CreateStream:       {"create-stream", GroupStream, true},
		DeleteStream:       {"delete-stream", GroupStream, true},
		GetStreamConfig:    {"get-stream-config", GroupStream, false},
		ReconfigureStream:  {"reconfigure-stream", GroupStream, true},
		CheckTail:          {"check-tail", GroupStream, false},
		Append:             {"append", GroupStream, true},
		Read:               {"read", GroupStream, false},
		Trim:               {"trim", GroupStream, true},
		Fence:              {"fence", GroupStream, true},
		AccountMetrics:     {"account-metrics", GroupAccount, false},
		BasinMetrics:       {"basin-metrics", GroupBasin, false},
		StreamMetrics:      {"stream-metrics", GroupStream, false},
		ListLocations:      {"list-locations", GroupAccount, false},
		GetDefaultLocation: {"get-default-location", GroupAccount, false},
		SetDefaultLocation: {"set-default-location", GroupAccount, true},
	}
	ops := Operations()
	if len(ops) != len(want) {
		t.Fatalf("%d operations, want %d", len(ops), len(want))
	}
	for _, op := range ops {
		w, ok := want[op]
		if !ok {
			t.Fatalf("operation %v not expected", op)
		}
		if op.String() != w.name {
			t.Errorf("%d is named %q, want %q", op, op, w.name)
		}
		if p, err := ParseOperation(w.name); err != nil || p != op {
			t.Errorf("ParseOperation(%q) = %v, %v", w.name, p, err)
		}
		if g, wr := op.Class(); g != w.group || wr != w.write {
			t.Errorf("%v is in %v write=%v, want %v write=%v", op, g, wr, w.group, w.write)
		}
		// The group grant alone gives it, and no other grant does.
		for _, g := range []Group{GroupAccount, GroupBasin, GroupStream} {
			for _, write := range []bool{false, true} {
				var sc Scope
				rw := ReadWrite{Read: !write, Write: write}
				switch g {
				case GroupAccount:
					sc.Account = rw
				case GroupBasin:
					sc.Basin = rw
				case GroupStream:
					sc.Stream = rw
				}
				if got, want := sc.Allows(op), g == w.group && write == w.write; got != want {
					t.Errorf("%v write=%v allows %v: %v, want %v", g, write, op, got, want)
				}
			}
		}
	}
	if _, err := ParseOperation("drop-everything"); !errors.Is(err, ErrInvalidScope) {
		t.Errorf("unknown operation: %v", err)
	}
}

func TestScopeAllowsTheUnionOfOpsAndGroups(t *testing.T) {
	sc := Scope{Stream: ReadWrite{Read: true}, Ops: OpSet(0).With(ListStreams)}
	for _, op := range []Operation{Read, CheckTail, GetStreamConfig, ListStreams} {
		if !sc.Allows(op) {
			t.Errorf("does not allow %v", op)
		}
	}
	for _, op := range []Operation{Append, Trim, Fence, CreateStream, ListBasins, IssueAccessToken} {
		if sc.Allows(op) {
			t.Errorf("allows %v", op)
		}
	}
	if (Scope{}).Allowed() != 0 {
		t.Error("the empty scope allows something")
	}
	if FullScope.Allowed() != AllOps {
		t.Error("the full scope does not allow everything")
	}
}

func TestResourceSetSubsetOf(t *testing.T) {
	cases := []struct {
		a, b ResourceSet
		want bool
	}{
		{ResourceSet{}, ResourceSet{}, true},
		{ResourceSet{}, ExactSet("x"), true},
		{ExactSet("x"), ResourceSet{}, false},
		{ExactSet("x"), ExactSet("x"), true},
		{ExactSet("x"), ExactSet("y"), false},
		{ExactSet("ab"), PrefixSet("a"), true},
		{ExactSet("ab"), PrefixSet("b"), false},
		{PrefixSet("a"), ExactSet("a"), false},
		{PrefixSet("ab"), PrefixSet("a"), true},
		{PrefixSet("a"), PrefixSet("ab"), false},
		{PrefixSet(""), PrefixSet("a"), false},
		{PrefixSet("a"), PrefixSet(""), true},
	}
	for _, c := range cases {
		if got := c.a.SubsetOf(c.b); got != c.want {
			t.Errorf("%v ⊆ %v = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// A random check of SubsetOf against Matches: when a ⊆ b, every name a matches b matches.
func TestResourceSetSubsetAgreesWithMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t), 0))
	word := func() string {
		b := make([]byte, rng.IntN(4))
		for i := range b {
			b[i] = "ab/"[rng.IntN(3)]
		}
		return string(b)
	}
	set := func() ResourceSet {
		switch rng.IntN(3) {
		case 0:
			return ResourceSet{}
		case 1:
			return ExactSet(word())
		}
		return PrefixSet(word())
	}
	for range 20000 {
		a, b := set(), set()
		if !a.SubsetOf(b) {
			continue
		}
		for range 20 {
			n := word() + word()
			if a.Kind == Exact || a.Kind == Prefix && rng.IntN(2) == 0 {
				n = a.Name + word()
			}
			if a.Matches(n) && !b.Matches(n) {
				t.Fatalf("%v ⊆ %v but %q is in the first only", a, b, n)
			}
		}
	}
}

func TestListWindowKeepsTheListingInsideTheSet(t *testing.T) {
	cases := []struct {
		set           ResourceSet
		prefix, after string
		wantP, wantA  string
		wantOK        bool
	}{
		{PrefixSet("a/"), "", "", "a/", "", true},
		{PrefixSet("a/"), "a/b", "a/b1", "a/b", "a/b1", true},
		{PrefixSet("a/"), "b", "", "", "", false},
		{PrefixSet(""), "x", "x1", "x", "x1", true},
		{ExactSet("a/x"), "", "", "a/x", "", true},
		{ExactSet("a/x"), "a/", "a/x", "", "", false}, // already past it
		{ExactSet("a/x"), "b", "", "", "", false},
		{ResourceSet{}, "", "", "", "", false},
	}
	for _, c := range cases {
		p, a, ok := c.set.ListWindow(c.prefix, c.after)
		if p != c.wantP || a != c.wantA || ok != c.wantOK {
			t.Errorf("%v.ListWindow(%q, %q) = %q, %q, %v; want %q, %q, %v", c.set, c.prefix, c.after, p, a, ok, c.wantP, c.wantA, c.wantOK)
		}
	}
}

func TestScopeWireRoundTripsS2JSON(t *testing.T) {
	body := `{"basins":{"exact":"orders-prod"},"streams":{"prefix":"svc-a/"},"access_tokens":{"exact":""},
		"op_groups":{"stream":{"read":true,"write":true},"account":{"read":true}},"ops":["list-streams","issue-access-token"]}`
	var w s2api.AccessTokenScope
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		t.Fatal(err)
	}
	sc, err := ScopeFromWire(w)
	if err != nil {
		t.Fatal(err)
	}
	want := Scope{Basins: ExactSet("orders-prod"), Streams: PrefixSet("svc-a/"),
		Account: ReadWrite{Read: true}, Stream: ReadWrite{true, true}, Ops: OpSet(0).With(ListStreams, IssueAccessToken)}
	if sc != want {
		t.Fatalf("decoded %+v, want %+v", sc, want)
	}
	back, err := ScopeFromWire(sc.Wire())
	if err != nil || back != sc {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	b, _ := json.Marshal(sc.Wire())
	if strings.Contains(string(b), "access_tokens") {
		t.Errorf("a set that matches nothing is sent: %s", b)
	}
}

func TestScopeFromWireRefusesMalformedSets(t *testing.T) {
	x := "x"
	for _, w := range []s2api.AccessTokenScope{
		{Basins: &s2api.ResourceSet{}},
		{Streams: &s2api.ResourceSet{Exact: &x, Prefix: &x}},
		{Ops: []string{"append", "nope"}},
	} {
		if _, err := ScopeFromWire(w); !errors.Is(err, ErrInvalidScope) {
			t.Errorf("%+v: %v, want ErrInvalidScope", w, err)
		}
	}
}

func TestPrincipalChecksOperationThenResources(t *testing.T) {
	p := &Principal{ID: "svc-a", Scope: Scope{Basins: ExactSet("orders-prod"), Streams: PrefixSet("svc-a/"),
		Stream: ReadWrite{Write: true}}}
	if err := p.CheckStream(Append, "orders-prod", "svc-a/events"); err != nil {
		t.Errorf("append in scope: %v", err)
	}
	reason := func(err error) Reason {
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("%v is not a refusal", err)
		}
		if !errors.Is(err, ErrDenied) {
			t.Errorf("%v is not ErrDenied", err)
		}
		return re.Reason
	}
	if r := reason(p.CheckStream(Read, "orders-prod", "svc-a/events")); r != ReasonOperation {
		t.Errorf("read: %v", r)
	}
	if r := reason(p.CheckStream(Append, "orders-prod", "svc-b/events")); r != ReasonResource {
		t.Errorf("other stream: %v", r)
	}
	if r := reason(p.CheckStream(Append, "orders-test", "svc-a/events")); r != ReasonResource {
		t.Errorf("other basin: %v", r)
	}
	if r := reason(p.CheckToken(IssueAccessToken, "x")); r != ReasonOperation {
		t.Errorf("issue: %v", r)
	}
}

func TestAutoPrefixAddsAndStripsTheStreamPrefix(t *testing.T) {
	p := &Principal{ID: "t", AutoPrefixStreams: true, Scope: Scope{Streams: PrefixSet("tenant-1/")}}
	if got := p.StreamName("events"); got != "tenant-1/events" {
		t.Errorf("StreamName = %q", got)
	}
	if got := p.Relative("tenant-1/events"); got != "events" {
		t.Errorf("Relative = %q", got)
	}
	p.AutoPrefixStreams = false
	if got := p.StreamName("events"); got != "events" {
		t.Errorf("without auto-prefix StreamName = %q", got)
	}
}
