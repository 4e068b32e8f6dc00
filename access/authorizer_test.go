package access

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
)

const rootToken = "root-secret-for-tests"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newAuthorizer(t *testing.T, st objectstore.Store, c *clock, opts ...Option) *Authorizer {
	t.Helper()
	a, err := New(st, rootToken, append([]Option{WithClock(c.now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func ptr[T any](v T) *T { return &v }

func set(kind, name string) *s2api.ResourceSet {
	if kind == "exact" {
		return &s2api.ResourceSet{Exact: &name}
	}
	return &s2api.ResourceSet{Prefix: &name}
}

func issue(t *testing.T, a *Authorizer, by *Principal, req s2api.IssueAccessTokenRequest) string {
	t.Helper()
	secret, err := a.Issue(context.Background(), by, req)
	if err != nil {
		t.Fatalf("issue %q: %v", req.ID, err)
	}
	return secret
}

func authn(t *testing.T, a *Authorizer, secret string) *Principal {
	t.Helper()
	p, err := a.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return p
}

func refusal(t *testing.T, err error) Reason {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("%v is not a refusal", err)
	}
	return re.Reason
}

// appender is a scope that appends to the streams under svc-a/ in one basin.
var appender = s2api.AccessTokenScope{Basins: set("exact", "orders-prod"), Streams: set("prefix", "svc-a/"),
	Ops: []string{"append"}}

func TestNewRefusesAZeroConfigWithEveryProblem(t *testing.T) {
	_, err := New(nil, "", WithRefreshInterval(0), WithCacheSize(0), WithClock(nil))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"store is nil", "root token is empty", "refresh interval", "cache size", "clock is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestAuthenticateRootMissingAndUnknownTokens(t *testing.T) {
	a := newAuthorizer(t, objectstore.NewMemStore(), newClock())
	if p := authn(t, a, rootToken); !p.Root || p.Scope.Allowed() != AllOps {
		t.Errorf("root: %+v", p)
	}
	ctx := context.Background()
	_, err := a.Authenticate(ctx, "")
	if refusal(t, err) != ReasonNoToken || !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("empty: %v", err)
	}
	for _, bad := range []string{rootToken + "x", "sl1.x.y", "sl1." + b64.EncodeToString([]byte("id")) + "." + b64.EncodeToString(make([]byte, 32))} {
		if _, err := a.Authenticate(ctx, bad); refusal(t, err) != ReasonUnknownToken {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestIssuedTokenAuthenticatesWithItsScopeAndTheStoreHoldsNoSecret(t *testing.T) {
	st := objectstore.NewMemStore()
	a := newAuthorizer(t, st, newClock())
	secret := issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "svc/a", Scope: appender})
	p := authn(t, a, secret)
	if p.Root || p.ID != "svc/a" || !p.ExpiresAt.IsZero() {
		t.Errorf("principal %+v", p)
	}
	if err := p.CheckStream(Append, "orders-prod", "svc-a/x"); err != nil {
		t.Error(err)
	}
	if err := p.CheckStream(Read, "orders-prod", "svc-a/x"); err == nil {
		t.Error("read allowed")
	}
	raw, _, err := objectstore.ReadAll(context.Background(), st, tokenKey("svc/a"))
	if err != nil {
		t.Fatal(err)
	}
	_, random, _ := strings.Cut(strings.TrimPrefix(secret, "sl1."), ".")
	if strings.Contains(string(raw), random) || strings.Contains(string(raw), secret) {
		t.Errorf("the token object holds the secret: %s", raw)
	}
	infos, more, err := a.List(context.Background(), RootPrincipal, "", "", 0)
	if err != nil || more || len(infos) != 1 || infos[0].ID != "svc/a" {
		t.Fatalf("list: %+v %v %v", infos, more, err)
	}
	b, _ := json.Marshal(infos)
	if strings.Contains(string(b), random) || strings.Contains(string(b), "hash") || strings.Contains(string(b), "salt") {
		t.Errorf("the listing shows a secret: %s", b)
	}
}

func TestTamperedSecretOfAKnownIDIsRefused(t *testing.T) {
	a := newAuthorizer(t, objectstore.NewMemStore(), newClock())
	secret := issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "t", Scope: appender})
	last := secret[len(secret)-2]
	swap := byte('A')
	if last == 'A' {
		swap = 'B'
	}
	forged := secret[:len(secret)-2] + string(swap) + secret[len(secret)-1:]
	if _, err := a.Authenticate(context.Background(), forged); refusal(t, err) != ReasonUnknownToken {
		t.Errorf("forged: %v", err)
	}
}

func TestIssueRefusesEscalation(t *testing.T) {
	c := newClock()
	a := newAuthorizer(t, objectstore.NewMemStore(), c)
	ctx := context.Background()
	parentExpiry := c.now().Add(time.Hour)
	parent := authn(t, a, issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{
		ID: "team-a", ExpiresAt: &parentExpiry,
		Scope: s2api.AccessTokenScope{Basins: set("prefix", "team-a-"), Streams: set("prefix", "svc/"),
			AccessTokens: set("prefix", "team-a/"), OpGroups: &s2api.PermittedOperationGroups{Stream: &s2api.ReadWritePermissions{Write: true}},
			Ops: []string{"issue-access-token", "revoke-access-token"}},
	}))
	child := func(id string, sc s2api.AccessTokenScope, exp *time.Time) error {
		_, err := a.Issue(ctx, parent, s2api.IssueAccessTokenRequest{ID: id, Scope: sc, ExpiresAt: exp})
		return err
	}
	narrow := s2api.AccessTokenScope{Basins: set("exact", "team-a-prod"), Streams: set("prefix", "svc/x/"), Ops: []string{"append"}}
	later := parentExpiry.Add(time.Second)
	cases := []struct {
		name string
		id   string
		sc   s2api.AccessTokenScope
		exp  *time.Time
		want Reason
	}{
		{"an operation it lacks", "team-a/1", s2api.AccessTokenScope{Basins: narrow.Basins, Streams: narrow.Streams, Ops: []string{"read"}}, nil, ReasonEscalation},
		{"a group it lacks", "team-a/2", s2api.AccessTokenScope{Basins: narrow.Basins, Streams: narrow.Streams,
			OpGroups: &s2api.PermittedOperationGroups{Account: &s2api.ReadWritePermissions{Read: true}}}, nil, ReasonEscalation},
		{"all streams", "team-a/3", s2api.AccessTokenScope{Basins: narrow.Basins, Streams: set("prefix", ""), Ops: []string{"append"}}, nil, ReasonEscalation},
		{"another basin", "team-a/4", s2api.AccessTokenScope{Basins: set("exact", "team-b-prod"), Streams: narrow.Streams, Ops: []string{"append"}}, nil, ReasonEscalation},
		{"wider token ids", "team-a/5", s2api.AccessTokenScope{Basins: narrow.Basins, AccessTokens: set("prefix", ""), Ops: []string{"revoke-access-token"}}, nil, ReasonEscalation},
		{"a later expiry", "team-a/6", narrow, &later, ReasonEscalation},
		{"an id outside its token set", "team-b/1", narrow, nil, ReasonResource},
	}
	for _, c := range cases {
		if err := child(c.id, c.sc, c.exp); err == nil || refusal(t, err) != c.want || !errors.Is(err, ErrDenied) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Within its scope it may issue, and the child's expiry defaults to its own.
	if err := child("team-a/ok", narrow, nil); err != nil {
		t.Fatalf("narrow child: %v", err)
	}
	infos, _, err := a.List(ctx, RootPrincipal, "team-a/ok", "", 1)
	if err != nil || len(infos) != 1 || infos[0].ExpiresAt == nil || !infos[0].ExpiresAt.Equal(parentExpiry) {
		t.Fatalf("child: %+v %v", infos, err)
	}
	// A token without issue-access-token cannot issue at all.
	ro := authn(t, a, issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "ro",
		Scope: s2api.AccessTokenScope{Basins: set("prefix", ""), Streams: set("prefix", ""), AccessTokens: set("prefix", ""),
			OpGroups: &s2api.PermittedOperationGroups{Stream: &s2api.ReadWritePermissions{Read: true}}}}))
	if _, err := a.Issue(ctx, ro, s2api.IssueAccessTokenRequest{ID: "x", Scope: narrow}); refusal(t, err) != ReasonOperation {
		t.Errorf("read-only issues: %v", err)
	}
}

func TestIssueRefusesInvalidRequestsAndDuplicates(t *testing.T) {
	c := newClock()
	a := newAuthorizer(t, objectstore.NewMemStore(), c)
	ctx := context.Background()
	past := c.now().Add(-time.Second)
	for _, req := range []s2api.IssueAccessTokenRequest{
		{ID: "", Scope: appender},
		{ID: strings.Repeat("x", 97), Scope: appender},
		{ID: "nul\x00", Scope: appender},
		{ID: "no-ops", Scope: s2api.AccessTokenScope{Basins: set("prefix", "")}},
		{ID: "auto-exact", Scope: s2api.AccessTokenScope{Streams: set("exact", "s"), Ops: []string{"read"}}, AutoPrefixStreams: ptr(true)},
		{ID: "past", Scope: appender, ExpiresAt: &past},
	} {
		if _, err := a.Issue(ctx, RootPrincipal, req); !errors.Is(err, ErrInvalidScope) {
			t.Errorf("%q: %v, want ErrInvalidScope", req.ID, err)
		}
	}
	issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "dup", Scope: appender})
	if _, err := a.Issue(ctx, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "dup", Scope: appender}); !errors.Is(err, ErrTokenExists) {
		t.Errorf("duplicate: %v", err)
	}
}

func TestExpiredTokenIsRefused(t *testing.T) {
	c := newClock()
	a := newAuthorizer(t, objectstore.NewMemStore(), c)
	exp := c.now().Add(time.Minute)
	secret := issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "short", Scope: appender, ExpiresAt: &exp})
	if p := authn(t, a, secret); !p.ExpiresAt.Equal(exp) {
		t.Errorf("expires at %v", p.ExpiresAt)
	}
	c.advance(time.Minute)
	if _, err := a.Authenticate(context.Background(), secret); refusal(t, err) != ReasonExpired {
		t.Errorf("expired: %v", err)
	}
}

func TestRevokeIsSeenAtOnceByItsAuthorizer(t *testing.T) {
	a := newAuthorizer(t, objectstore.NewMemStore(), newClock())
	secret := issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "gone", Scope: appender})
	p := authn(t, a, secret)
	if err := a.Revoke(context.Background(), RootPrincipal, "gone"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Revoked():
	default:
		t.Error("the principal's Revoked channel is open")
	}
	if _, err := a.Authenticate(context.Background(), secret); refusal(t, err) != ReasonRevoked {
		t.Errorf("after revoke: %v", err)
	}
	if err := a.Revoke(context.Background(), RootPrincipal, "gone"); err != nil {
		t.Errorf("second revoke: %v", err)
	}
	// The id may be issued again; the old secret stays refused.
	fresh := issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "gone", Scope: appender})
	authn(t, a, fresh)
	if _, err := a.Authenticate(context.Background(), secret); err == nil {
		t.Error("the revoked secret works for the re-issued id")
	}
}

func TestRevocationOnOneDaemonIsSeenByAnotherWithinTheRefreshInterval(t *testing.T) {
	st := objectstore.NewMemStore()
	c := newClock()
	const refresh = 3 * time.Second
	d1 := newAuthorizer(t, st, c, WithRefreshInterval(refresh))
	d2 := newAuthorizer(t, st, c, WithRefreshInterval(refresh))
	secret := issue(t, d1, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "shared", Scope: appender})
	authn(t, d1, secret)
	p2 := authn(t, d2, secret) // d2 reads it from the store
	if err := d1.Revoke(context.Background(), RootPrincipal, "shared"); err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Authenticate(context.Background(), secret); refusal(t, err) != ReasonRevoked {
		t.Errorf("d1: %v", err)
	}
	// d2 may trust its read for less than the interval, and not after it.
	c.advance(refresh - time.Millisecond)
	authn(t, d2, secret)
	c.advance(time.Millisecond)
	if _, err := d2.Authenticate(context.Background(), secret); refusal(t, err) != ReasonRevoked {
		t.Errorf("d2 after the interval: %v", err)
	}
	select {
	case <-p2.Revoked():
	default:
		t.Error("d2's principal was not told")
	}
}

func TestListShowsOnlyTheCallersTokenSetInPages(t *testing.T) {
	a := newAuthorizer(t, objectstore.NewMemStore(), newClock())
	for _, id := range []string{"a/1", "a/2", "a/3", "b/1", "a"} {
		issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: id, Scope: appender})
	}
	lister := authn(t, a, issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "a/lister",
		Scope: s2api.AccessTokenScope{AccessTokens: set("prefix", "a/"), Ops: []string{"list-access-tokens"}}}))
	ctx := context.Background()
	var got []string
	after := ""
	for {
		infos, more, err := a.List(ctx, lister, "", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range infos {
			got = append(got, i.ID)
			after = i.ID
		}
		if !more {
			break
		}
	}
	if strings.Join(got, " ") != "a/1 a/2 a/3 a/lister" {
		t.Errorf("listed %v", got)
	}
	if infos, _, _ := a.List(ctx, lister, "b", "", 0); len(infos) != 0 {
		t.Errorf("listed outside its set: %+v", infos)
	}
	if _, _, err := a.List(ctx, authn(t, a, issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "nolist", Scope: appender})), "", "", 0); refusal(t, err) != ReasonOperation {
		t.Errorf("list without the operation: %v", err)
	}
}

func TestCacheStaysWithinItsSize(t *testing.T) {
	a := newAuthorizer(t, objectstore.NewMemStore(), newClock(), WithCacheSize(2))
	var secrets []string
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		secrets = append(secrets, issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: id, Scope: appender}))
	}
	for _, s := range secrets {
		authn(t, a, s)
	}
	a.mu.Lock()
	n := len(a.cache)
	a.mu.Unlock()
	if n > 2 {
		t.Errorf("%d entries cached", n)
	}
}

// Sessions authenticate again and again while the token is revoked; run with -race.
func TestConcurrentAuthenticationAndRevocation(t *testing.T) {
	c := newClock()
	a := newAuthorizer(t, objectstore.NewMemStore(), c, WithRefreshInterval(time.Millisecond))
	secret := issue(t, a, RootPrincipal, s2api.IssueAccessTokenRequest{ID: "busy", Scope: appender})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				c.advance(time.Millisecond)
				_, _ = a.Authenticate(context.Background(), secret)
			}
		}()
	}
	if err := a.Revoke(context.Background(), RootPrincipal, "busy"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Revoked, or unknown if the revocation came before any goroutine had seen it.
	if _, err := a.Authenticate(context.Background(), secret); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("after revoke: %v", err)
	}
}
