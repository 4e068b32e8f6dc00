package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/access"
	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
)

const (
	accessRoot       = "root-token-for-tests"
	accessBasin      = "orders-prod"
	accessOtherBasin = "orders-test"
)

type accessClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *accessClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *accessClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// accessDaemon is a server with access tokens over an engine, on a store it may share.
type accessDaemon struct {
	url string
	reg *prometheus.Registry
}

func startAccessDaemon(t *testing.T, st objectstore.Store, clock *accessClock) *accessDaemon {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.Store = st
	cfg.LagInterval = 0
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	az, err := access.New(st, accessRoot, access.WithClock(clock.now), access.WithRefreshInterval(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := server.New(eng.S2(), server.WithAccess(az), server.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close()
		_ = eng.Close(context.Background())
	})
	return &accessDaemon{url: ts.URL, reg: reg}
}

type accessAnswer struct {
	status int
	body   string
}

func (d *accessDaemon) call(t *testing.T, token, method, path, basinHdr string, body any) accessAnswer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, d.url+"/v1"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if basinHdr != "" {
		req.Header.Set("S2-Basin", basinHdr)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return accessAnswer{res.StatusCode, string(b)}
}

func (d *accessDaemon) must(t *testing.T, what string, a accessAnswer, status int) accessAnswer {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: %d %s, want %d", what, a.status, a.body, status)
	}
	return a
}

func (d *accessDaemon) issue(t *testing.T, by string, req s2api.IssueAccessTokenRequest) string {
	t.Helper()
	a := d.must(t, "issue "+req.ID, d.call(t, by, "POST", "/access-tokens", "", req), 201)
	var resp s2api.IssueAccessTokenResponse
	if err := json.Unmarshal([]byte(a.body), &resp); err != nil || resp.AccessToken == "" {
		t.Fatalf("issue: %s %v", a.body, err)
	}
	return resp.AccessToken
}

func resourceSet(kind, name string) *s2api.ResourceSet {
	if kind == "exact" {
		return &s2api.ResourceSet{Exact: &name}
	}
	return &s2api.ResourceSet{Prefix: &name}
}

func appendJSON(records ...batchfmt.Record) string {
	var parts []string
	for _, r := range records {
		if r.IsCommand() {
			parts = append(parts, `{"headers":[["",`+jsonString(string(r.Headers[0].Value))+`]],"body":`+jsonString(string(r.Body))+`}`)
		} else {
			parts = append(parts, `{"body":`+jsonString(string(r.Body))+`}`)
		}
	}
	return `{"records":[` + strings.Join(parts, ",") + `]}`
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// setup creates the basins and a few streams as root.
func setupAccess(t *testing.T, d *accessDaemon) {
	t.Helper()
	for _, b := range []string{accessBasin, accessOtherBasin} {
		d.must(t, "create basin", d.call(t, accessRoot, "POST", "/basins", "", map[string]any{"basin": b}), 201)
		for _, s := range []string{"svc-a/events", "svc-b/events"} {
			d.must(t, "create stream", d.call(t, accessRoot, "POST", "/streams", b, map[string]any{"stream": s}), 201)
			d.must(t, "append", d.call(t, accessRoot, "POST", "/streams/"+escapeName(s)+"/records", b, appendJSON(batchfmt.Record{Body: []byte("x")})), 200)
		}
	}
}

func escapeName(s string) string { return strings.ReplaceAll(s, "/", "%2F") }

func refusalCount(t *testing.T, d *accessDaemon, reason access.Reason) float64 {
	t.Helper()
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_api_access_refusals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == string(reason) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no refusal metric for %s", reason)
	return 0
}

func TestReadOnlyTokenReadsItsBasinAndIsRefusedWrites(t *testing.T) {
	st := objectstore.NewMemStore()
	d := startAccessDaemon(t, st, &accessClock{t: time.Now()})
	setupAccess(t, d)
	ro := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "dashboard", Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", ""),
		OpGroups: &s2api.PermittedOperationGroups{Basin: &s2api.ReadWritePermissions{Read: true}, Stream: &s2api.ReadWritePermissions{Read: true}},
	}})
	s := "/streams/svc-a%2Fevents"
	d.must(t, "read", d.call(t, ro, "GET", s+"/records?seq_num=0", accessBasin, nil), 200)
	d.must(t, "tail", d.call(t, ro, "GET", s+"/records/tail", accessBasin, nil), 200)
	d.must(t, "list streams", d.call(t, ro, "GET", "/streams", accessBasin, nil), 200)
	d.must(t, "config", d.call(t, ro, "GET", s, accessBasin, nil), 200)
	for _, c := range []struct {
		what, method, path, hdrBasin string
		body                         any
	}{
		{"append", "POST", s + "/records", accessBasin, appendJSON(batchfmt.Record{Body: []byte("y")})},
		{"trim", "POST", s + "/records", accessBasin, appendJSON(batchfmt.TrimRecord(0))},
		{"fence", "POST", s + "/records", accessBasin, appendJSON(batchfmt.FenceRecord("f"))},
		{"create stream", "POST", "/streams", accessBasin, map[string]any{"stream": "new"}},
		{"delete stream", "DELETE", s, accessBasin, nil},
		{"reconfigure stream", "PATCH", s, accessBasin, "{}"},
		{"create basin", "POST", "/basins", "", map[string]any{"basin": "new-accessBasin-1"}},
		{"delete basin", "DELETE", "/basins/" + accessBasin, "", nil},
		{"read another basin", "GET", s + "/records?seq_num=0", accessOtherBasin, nil},
		{"issue a token", "POST", "/access-tokens", "", s2api.IssueAccessTokenRequest{ID: "x", Scope: s2api.AccessTokenScope{Basins: resourceSet("exact", accessBasin), Ops: []string{"read"}}}},
		{"revoke a token", "DELETE", "/access-tokens/dashboard", "", nil},
		{"list tokens", "GET", "/access-tokens", "", nil},
	} {
		a := d.call(t, ro, c.method, c.path, c.hdrBasin, c.body)
		if a.status != 403 || !strings.Contains(a.body, `"code":"permission_denied"`) {
			t.Errorf("%s: %d %s, want 403 permission_denied", c.what, a.status, a.body)
		}
	}
	// The refused writes left the stream as it was.
	a := d.must(t, "tail", d.call(t, accessRoot, "GET", s+"/records/tail", accessBasin, nil), 200)
	if !strings.Contains(a.body, `"seq_num":1`) {
		t.Errorf("tail after refused writes: %s", a.body)
	}
	if n := refusalCount(t, d, access.ReasonOperation) + refusalCount(t, d, access.ReasonResource); n != 12 {
		t.Errorf("%v refusals counted, want 12", n)
	}
	for _, tok := range []string{"", "nonsense", ro + "x"} {
		a := d.call(t, tok, "GET", s+"/records/tail", accessBasin, nil)
		if a.status != 401 || !strings.Contains(a.body, `"code":"authn"`) {
			t.Errorf("token %q: %d %s", tok, a.status, a.body)
		}
	}
	if refusalCount(t, d, access.ReasonNoToken) != 1 || refusalCount(t, d, access.ReasonUnknownToken) != 2 {
		t.Error("authentication refusals not counted by reason")
	}
}

func TestServiceTokenAppendsToItsStreamsAndNowhereElse(t *testing.T) {
	d := startAccessDaemon(t, objectstore.NewMemStore(), &accessClock{t: time.Now()})
	setupAccess(t, d)
	svc := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "svc-a", Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", "svc-a/"), Ops: []string{"append", "create-stream"},
	}})
	rec := appendJSON(batchfmt.Record{Body: []byte("z")})
	d.must(t, "append own", d.call(t, svc, "POST", "/streams/svc-a%2Fevents/records", accessBasin, rec), 200)
	d.must(t, "create own", d.call(t, svc, "POST", "/streams", accessBasin, map[string]any{"stream": "svc-a/more"}), 201)
	d.must(t, "append other stream", d.call(t, svc, "POST", "/streams/svc-b%2Fevents/records", accessBasin, rec), 403)
	d.must(t, "append other basin", d.call(t, svc, "POST", "/streams/svc-a%2Fevents/records", accessOtherBasin, rec), 403)
	d.must(t, "create other", d.call(t, svc, "POST", "/streams", accessBasin, map[string]any{"stream": "svc-b/more"}), 403)
	d.must(t, "read own", d.call(t, svc, "GET", "/streams/svc-a%2Fevents/records", accessBasin, nil), 403)
	d.must(t, "trim own", d.call(t, svc, "POST", "/streams/svc-a%2Fevents/records", accessBasin, appendJSON(batchfmt.TrimRecord(1))), 403)
	// Escalation through the API: the service may not issue, and root's issue of a scope
	// wider than an issuer's is refused when that issuer asks.
	issuer := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "svc-a-admin", Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", "svc-a/"), AccessTokens: resourceSet("prefix", "svc-a/"),
		Ops: []string{"append", "issue-access-token"},
	}})
	d.must(t, "issue wider", d.call(t, issuer, "POST", "/access-tokens", "", s2api.IssueAccessTokenRequest{ID: "svc-a/1",
		Scope: s2api.AccessTokenScope{Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", ""), Ops: []string{"append"}}}), 403)
	d.must(t, "issue narrower", d.call(t, issuer, "POST", "/access-tokens", "", s2api.IssueAccessTokenRequest{ID: "svc-a/2",
		Scope: s2api.AccessTokenScope{Basins: resourceSet("exact", accessBasin), Streams: resourceSet("exact", "svc-a/events"), Ops: []string{"append"}}}), 201)
	if refusalCount(t, d, access.ReasonEscalation) != 1 {
		t.Error("escalation not counted")
	}
}

func TestListingTokensNeverShowsASecret(t *testing.T) {
	d := startAccessDaemon(t, objectstore.NewMemStore(), &accessClock{t: time.Now()})
	secret := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "svc/a", Scope: s2api.AccessTokenScope{Basins: resourceSet("prefix", ""), Ops: []string{"list-basins"}}})
	a := d.must(t, "list", d.call(t, accessRoot, "GET", "/access-tokens", "", nil), 200)
	var resp s2api.ListAccessTokensResponse
	if err := json.Unmarshal([]byte(a.body), &resp); err != nil || len(resp.AccessTokens) != 1 || resp.AccessTokens[0].ID != "svc/a" {
		t.Fatalf("list: %s %v", a.body, err)
	}
	random := secret[strings.LastIndexByte(secret, '.')+1:]
	if strings.Contains(a.body, random) {
		t.Errorf("the listing holds the secret: %s", a.body)
	}
	d.must(t, "duplicate", d.call(t, accessRoot, "POST", "/access-tokens", "", s2api.IssueAccessTokenRequest{ID: "svc/a",
		Scope: s2api.AccessTokenScope{Ops: []string{"list-basins"}}}), 409)
	d.must(t, "revoke", d.call(t, accessRoot, "DELETE", "/access-tokens/svc%2Fa", "", nil), 204)
	d.must(t, "revoked", d.call(t, secret, "GET", "/basins", "", nil), 401)
}

func TestAutoPrefixedTokenSeesRelativeStreamNames(t *testing.T) {
	d := startAccessDaemon(t, objectstore.NewMemStore(), &accessClock{t: time.Now()})
	setupAccess(t, d)
	yes := true
	tenant := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "tenant", AutoPrefixStreams: &yes, Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", "svc-a/"),
		OpGroups: &s2api.PermittedOperationGroups{Stream: &s2api.ReadWritePermissions{Read: true, Write: true}}, Ops: []string{"list-streams"},
	}})
	a := d.must(t, "create", d.call(t, tenant, "POST", "/streams", accessBasin, map[string]any{"stream": "logs"}), 201)
	if !strings.Contains(a.body, `"name":"logs"`) {
		t.Errorf("created: %s", a.body)
	}
	d.must(t, "append", d.call(t, tenant, "POST", "/streams/events/records", accessBasin, appendJSON(batchfmt.Record{Body: []byte("q")})), 200)
	a = d.must(t, "list", d.call(t, tenant, "GET", "/streams", accessBasin, nil), 200)
	var l s2api.ListStreamsResponse
	if err := json.Unmarshal([]byte(a.body), &l); err != nil || len(l.Streams) != 2 || l.Streams[0].Name != "events" || l.Streams[1].Name != "logs" {
		t.Errorf("tenant's listing: %s %v", a.body, err)
	}
	a = d.must(t, "root tail", d.call(t, accessRoot, "GET", "/streams/svc-a%2Fevents/records/tail", accessBasin, nil), 200)
	if !strings.Contains(a.body, `"seq_num":2`) {
		t.Errorf("the tenant's append did not land in svc-a/events: %s", a.body)
	}
	d.must(t, "root sees the full name", d.call(t, accessRoot, "GET", "/streams/svc-a%2Flogs", accessBasin, nil), 200)
}

func TestExpiredTokenIsRefused(t *testing.T) {
	clock := &accessClock{t: time.Now()}
	d := startAccessDaemon(t, objectstore.NewMemStore(), clock)
	exp := clock.now().Add(time.Hour)
	tok := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "short", ExpiresAt: &exp, Scope: s2api.AccessTokenScope{Basins: resourceSet("prefix", ""), Ops: []string{"list-basins"}}})
	d.must(t, "before expiry", d.call(t, tok, "GET", "/basins", "", nil), 200)
	clock.advance(time.Hour)
	a := d.must(t, "after expiry", d.call(t, tok, "GET", "/basins", "", nil), 401)
	if !strings.Contains(a.body, "expired") || refusalCount(t, d, access.ReasonExpired) != 1 {
		t.Errorf("expired: %s", a.body)
	}
}

func TestTwoDaemonsOnOneStoreSeeARevocation(t *testing.T) {
	st := objectstore.NewMemStore()
	clock := &accessClock{t: time.Now()}
	d1, d2 := startAccessDaemon(t, st, clock), startAccessDaemon(t, st, clock)
	tok := d1.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "shared", Scope: s2api.AccessTokenScope{Basins: resourceSet("prefix", ""), Ops: []string{"list-basins"}}})
	d2.must(t, "d2 before", d2.call(t, tok, "GET", "/basins", "", nil), 200)
	d1.must(t, "revoke on d1", d1.call(t, accessRoot, "DELETE", "/access-tokens/shared", "", nil), 204)
	d1.must(t, "d1 after", d1.call(t, tok, "GET", "/basins", "", nil), 401)
	clock.advance(2 * time.Second) // d2's refresh interval
	a := d2.must(t, "d2 after the refresh interval", d2.call(t, tok, "GET", "/basins", "", nil), 401)
	if !strings.Contains(a.body, "revoked") {
		t.Errorf("d2: %s", a.body)
	}
}

func TestSessionsEndWhenTheirTokenIsRevoked(t *testing.T) {
	d := startAccessDaemon(t, objectstore.NewMemStore(), &accessClock{t: time.Now()})
	setupAccess(t, d)
	tok := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "session", Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", "svc-a/"),
		OpGroups: &s2api.PermittedOperationGroups{Stream: &s2api.ReadWritePermissions{Read: true, Write: true}},
	}})
	open := func(hdr map[string]string, body io.Reader, method string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), method, d.url+"/v1/streams/svc-a%2Fevents/records", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("S2-Basin", accessBasin)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.StatusCode != 200 {
			t.Fatalf("open session: %d", res.StatusCode)
		}
		return res
	}
	// An SSE read session following the stream, and an S2S append session.
	sse := open(map[string]string{"Accept": "text/event-stream"}, nil, "GET")
	events := s2api.NewSSEReader(sse.Body, 1<<20)
	if ev, err := events.Next(); err != nil || ev.Event != "batch" {
		t.Fatalf("first event: %+v %v", ev, err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	app := open(map[string]string{"Content-Type": "s2s/proto"}, pr, "POST")
	frames := s2api.NewFrameReader(app.Body, 0)
	in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("s")}}}
	f, _ := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &in)})
	if _, err := pw.Write(f); err != nil {
		t.Fatal(err)
	}
	if fr, err := frames.Next(); err != nil || fr.Terminal {
		t.Fatalf("ack: %+v %v", fr, err)
	}

	d.must(t, "revoke", d.call(t, accessRoot, "DELETE", "/access-tokens/session", "", nil), 204)

	for {
		ev, err := events.Next()
		if err != nil {
			t.Fatalf("the SSE session ended without an error event: %v", err)
		}
		if ev.Event == "error" {
			if !strings.Contains(ev.Data, "authn") {
				t.Errorf("error event: %s", ev.Data)
			}
			break
		}
	}
	if _, err := events.Next(); err != io.EOF {
		t.Errorf("after the error event: %v", err)
	}
	fr, err := frames.Next()
	if err != nil || !fr.Terminal || fr.Status != 401 || !strings.Contains(string(fr.Body), "revoked") {
		t.Fatalf("append session's last frame: %+v %s %v", fr, fr.Body, err)
	}
	if n := refusalCount(t, d, access.ReasonRevoked); n != 2 {
		t.Errorf("%v revocations counted, want 2", n)
	}
}

// A session's token that expires while it runs ends the session. The authorizer's clock runs
// an hour behind the wall clock, so the token is valid when the session opens and its expiry
// is already past for the session's timer: no waiting. (The timer may also fire before the
// session's first write, and the refusal is then its accessAnswer.)
func TestSessionEndsWhenItsTokenExpires(t *testing.T) {
	clock := &accessClock{t: time.Now().Add(-time.Hour)}
	d := startAccessDaemon(t, objectstore.NewMemStore(), clock)
	setupAccess(t, d)
	exp := clock.now().Add(30 * time.Minute)
	tok := d.issue(t, accessRoot, s2api.IssueAccessTokenRequest{ID: "expiring", ExpiresAt: &exp, Scope: s2api.AccessTokenScope{
		Basins: resourceSet("exact", accessBasin), Streams: resourceSet("prefix", ""), OpGroups: &s2api.PermittedOperationGroups{Stream: &s2api.ReadWritePermissions{Read: true}},
	}})
	req, err := http.NewRequestWithContext(t.Context(), "GET", d.url+"/v1/streams/svc-a%2Fevents/records", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("S2-Basin", accessBasin)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		// The timer may fire before the session's first write: then the refusal is the accessAnswer.
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 401 || !strings.Contains(string(b), "expired") {
			t.Fatalf("open: %d %s", res.StatusCode, b)
		}
		return
	}
	events := s2api.NewSSEReader(res.Body, 1<<20)
	for {
		ev, err := events.Next()
		if err != nil {
			t.Fatalf("the session ended without an error event: %v", err)
		}
		if ev.Event == "error" {
			if !strings.Contains(ev.Data, "expired") {
				t.Errorf("error event: %s", ev.Data)
			}
			break
		}
	}
	if n := refusalCount(t, d, access.ReasonExpired); n != 1 {
		t.Errorf("%v expiries counted, want 1", n)
	}
}
