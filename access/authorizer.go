package access

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
)

// Defaults of the options.
const (
	// DefaultRefreshInterval is how long a token checked against the store is taken on
	// trust: a revocation or a new issue through another daemon is seen within it.
	DefaultRefreshInterval = 5 * time.Second
	// DefaultCacheSize bounds the tokens (valid or refused) the authorizer remembers.
	DefaultCacheSize = 10000
)

// Option configures an Authorizer.
type Option func(*options)

type options struct {
	root      string
	refresh   time.Duration
	cacheSize int
	now       func() time.Time
}

// WithRefreshInterval sets how long a checked token is trusted before it is read from the
// store again (default 5 s; must be in (0, 1 min]).
func WithRefreshInterval(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithCacheSize bounds the cache (default 10000; at least 1).
func WithCacheSize(n int) Option { return func(o *options) { o.cacheSize = n } }

// WithClock replaces time.Now (for expiry and the cache's refresh).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Authorizer authenticates bearer tokens: the root token it is given, and the tokens issued
// into its store. It issues, lists and revokes tokens on behalf of a Principal, refusing
// what the principal's scope does not grant.
//
// Staleness: a token is read from the store when first seen and again when it was last
// read more than the refresh interval ago; so a revocation (or expiry change) made through
// another daemon on the same store is seen by this one within the refresh interval. A
// revocation through this authorizer is seen at once. A store failure while reading a token
// is an error (the call is not served): the cache never outlives the interval.
//
// An Authorizer is safe for concurrent use and owns no goroutine.
type Authorizer struct {
	tokens tokens
	root   []byte
	opts   options

	mu      sync.Mutex
	cache   map[[sha256.Size]byte]*entry
	revokes uint64 // revocations through this authorizer so far
}

// entry is what the cache knows of one secret.
type entry struct {
	tok     *Token        // nil: refused
	refusal *RefusedError // why, when tok is nil
	checked time.Time
	revoked chan struct{} // closed (under Authorizer.mu) when a valid token is found revoked
}

// New returns an Authorizer whose root token is root and whose issued tokens live in store
// (under KeyPrefix).
func New(store objectstore.Store, root string, opts ...Option) (*Authorizer, error) {
	o := options{root: root, refresh: DefaultRefreshInterval, cacheSize: DefaultCacheSize, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	var errs []error
	if store == nil {
		errs = append(errs, errors.New("access: store is nil"))
	}
	if root == "" {
		errs = append(errs, errors.New("access: root token is empty"))
	}
	if o.refresh <= 0 || o.refresh > time.Minute {
		errs = append(errs, fmt.Errorf("access: refresh interval %v is not in (0, 1m]", o.refresh))
	}
	if o.cacheSize < 1 {
		errs = append(errs, fmt.Errorf("access: cache size %d is below 1", o.cacheSize))
	}
	if o.now == nil {
		errs = append(errs, errors.New("access: clock is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Authorizer{tokens: tokens{store}, root: []byte(root), opts: o, cache: map[[sha256.Size]byte]*entry{}}, nil
}

// RefreshInterval is the bound on how stale a token's state may be.
func (a *Authorizer) RefreshInterval() time.Duration { return a.opts.refresh }

// IsRoot reports, in constant time, whether bearer is the root token.
func (a *Authorizer) IsRoot(bearer string) bool {
	return subtle.ConstantTimeCompare([]byte(bearer), a.root) == 1
}

// Authenticate returns the principal of bearer (the token, without "Bearer "). A refusal is
// a *RefusedError (errors.Is ErrUnauthenticated); any other error is the store's.
func (a *Authorizer) Authenticate(ctx context.Context, bearer string) (*Principal, error) {
	if bearer == "" {
		return nil, refused(ReasonNoToken, "no bearer token")
	}
	if a.IsRoot(bearer) {
		return RootPrincipal, nil
	}
	id, ok := secretID(bearer)
	if !ok {
		return nil, refused(ReasonUnknownToken, "not an access token of this store")
	}
	key := cacheKey(bearer)
	now := a.opts.now()
	a.mu.Lock()
	e := a.cache[key]
	a.mu.Unlock()
	if e == nil || now.Sub(e.checked) >= a.opts.refresh || now.Before(e.checked) {
		var err error
		if e, err = a.refresh(ctx, key, id, bearer, e, now); err != nil {
			return nil, err
		}
	}
	if e.tok == nil {
		return nil, e.refusal
	}
	if !e.tok.ExpiresAt.IsZero() && !now.Before(e.tok.ExpiresAt) {
		return nil, refused(ReasonExpired, "access token %q expired at %s", id, e.tok.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return e.tok.principal(e.revoked), nil
}

// refresh reads token id from the store and records what it found for the secret. A
// revocation through this authorizer while the read was under way makes it read again: the
// read may predate the revocation.
func (a *Authorizer) refresh(ctx context.Context, key [sha256.Size]byte, id, secret string, old *entry, now time.Time) (*entry, error) {
	for {
		a.mu.Lock()
		gen := a.revokes
		a.mu.Unlock()
		tok, err := a.tokens.get(ctx, id)
		if err != nil && !errors.Is(err, ErrTokenNotFound) {
			return nil, fmt.Errorf("access: read access token: %w", err)
		}
		valid := err == nil && secretMatches(tok.salt, tok.hash, secret)
		a.mu.Lock()
		if a.revokes != gen {
			a.mu.Unlock()
			continue
		}
		cur := a.cache[key]
		ne := &entry{checked: now}
		switch {
		case valid && cur != nil && cur.tok != nil:
			ne.tok, ne.revoked = tok, cur.revoked
		case valid:
			ne.tok, ne.revoked = tok, make(chan struct{})
		case (cur != nil && cur.tok != nil) || (old != nil && old.tok != nil) ||
			(cur != nil && cur.refusal != nil && cur.refusal.Reason == ReasonRevoked):
			// It was valid, and its object is gone (or holds another secret's token).
			ne.refusal = refused(ReasonRevoked, "access token %q was revoked", id)
			if cur != nil && cur.tok != nil {
				close(cur.revoked)
			}
		default:
			ne.refusal = refused(ReasonUnknownToken, "no such access token")
		}
		if cur == nil && len(a.cache) >= a.opts.cacheSize {
			for k := range a.cache { // evict one, any one
				delete(a.cache, k)
				break
			}
		}
		a.cache[key] = ne
		a.mu.Unlock()
		return ne, nil
	}
}

// Issue issues a token with req's id, scope, expiry and auto-prefixing on behalf of by, and
// returns its secret (which nothing keeps). by must be granted issue-access-token on the id;
// the new scope must be within by's (ReasonEscalation otherwise), and its expiry no later
// than by's (which it defaults to).
func (a *Authorizer) Issue(ctx context.Context, by *Principal, req s2api.IssueAccessTokenRequest) (string, error) {
	if err := ValidateID(req.ID); err != nil {
		return "", err
	}
	if err := by.CheckToken(IssueAccessToken, req.ID); err != nil {
		return "", err
	}
	sc, err := ScopeFromWire(req.Scope)
	if err != nil {
		return "", err
	}
	if sc.Allowed() == 0 {
		return "", fmt.Errorf("%w: the scope grants no operation", ErrInvalidScope)
	}
	auto := req.AutoPrefixStreams != nil && *req.AutoPrefixStreams
	if auto && sc.Streams.Kind != Prefix {
		return "", fmt.Errorf("%w: auto_prefix_streams needs a stream prefix in the scope", ErrInvalidScope)
	}
	if !sc.SubsetOf(by.Scope) {
		return "", refused(ReasonEscalation, "token %q may not issue a scope wider than its own", by.Name())
	}
	now := a.opts.now()
	expires := by.ExpiresAt
	if req.ExpiresAt != nil {
		if !req.ExpiresAt.After(now) {
			return "", fmt.Errorf("%w: expires_at %s is not in the future", ErrInvalidScope, req.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if !by.ExpiresAt.IsZero() && req.ExpiresAt.After(by.ExpiresAt) {
			return "", refused(ReasonEscalation, "token %q may not issue a token that outlives it", by.Name())
		}
		expires = *req.ExpiresAt
	}
	secret, err := newSecret(req.ID)
	if err != nil {
		return "", err
	}
	salt, err := newSalt()
	if err != nil {
		return "", err
	}
	t := &Token{ID: req.ID, Scope: sc, ExpiresAt: expires, AutoPrefixStreams: auto, IssuedAt: now,
		IssuedBy: by.Name(), salt: salt, hash: hashSecret(salt, secret)}
	if err := a.tokens.create(ctx, t); err != nil {
		return "", err
	}
	return secret, nil
}

// Revoke revokes the token id on behalf of by, which must be granted revoke-access-token on
// the id. Revoking a token that does not exist succeeds (a retry of a revoke does). Sessions
// of the token on this authorizer see it at once (Principal.Revoked).
func (a *Authorizer) Revoke(ctx context.Context, by *Principal, id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if err := by.CheckToken(RevokeAccessToken, id); err != nil {
		return err
	}
	if err := a.tokens.remove(ctx, id); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.revokes++
	for k, e := range a.cache {
		if e.tok != nil && e.tok.ID == id {
			close(e.revoked)
			a.cache[k] = &entry{checked: a.opts.now(), refusal: refused(ReasonRevoked, "access token %q was revoked", id)}
		}
	}
	return nil
}

// List lists, on behalf of by, the tokens whose ids start with prefix and sort after
// startAfter, at most limit (1 to 1000) of them, among those by's scope names; and whether
// more follow. Secrets are never listed: the store does not have them.
func (a *Authorizer) List(ctx context.Context, by *Principal, prefix, startAfter string, limit int) ([]s2api.AccessTokenInfo, bool, error) {
	if err := by.CheckOp(ListAccessTokens); err != nil {
		return nil, false, err
	}
	limit = objectstore.PageLimit(limit)
	p, after, ok := by.Scope.AccessTokens.ListWindow(prefix, startAfter)
	if !ok {
		return []s2api.AccessTokenInfo{}, false, nil
	}
	toks, more, err := a.tokens.list(ctx, p, after, limit)
	if err != nil {
		return nil, false, err
	}
	infos := []s2api.AccessTokenInfo{}
	for _, t := range toks {
		if by.Scope.AccessTokens.Matches(t.ID) {
			infos = append(infos, t.Info())
		}
	}
	return infos, more, nil
}
