package access

import (
	"strings"
	"time"
)

// Principal is who makes a call: the root token, or an issued token with its scope.
type Principal struct {
	// ID is the token's id; "" for the root token.
	ID string
	// Root is the root token (the daemon's --auth-token): it may do everything.
	Root  bool
	Scope Scope
	// ExpiresAt is when the token stops being valid; zero for never.
	ExpiresAt time.Time
	// AutoPrefixStreams: stream names in calls are relative to the scope's stream prefix.
	AutoPrefixStreams bool

	revoked <-chan struct{} // closed when the authorizer learns of the token's revocation
}

// RootPrincipal is the root token's principal.
var RootPrincipal = &Principal{Root: true, Scope: FullScope}

// Revoked returns a channel closed when the authorizer that authenticated p learns that p's
// token was revoked (at once for a revocation through it, within its refresh interval for
// one through another daemon on the store, if something authenticates the token again). It
// is nil (never closed) for the root token.
func (p *Principal) Revoked() <-chan struct{} { return p.revoked }

// Name is how p is named in messages and logs: the token id, or "root".
func (p *Principal) Name() string {
	if p.Root {
		return "root"
	}
	return p.ID
}

func (p *Principal) checkOp(op Operation) error {
	if !p.Scope.Allows(op) {
		return refused(ReasonOperation, "token %q may not %s", p.Name(), op)
	}
	return nil
}

// CheckBasin checks that p may do op on basin (an account or basin operation).
func (p *Principal) CheckBasin(op Operation, basin string) error {
	if err := p.checkOp(op); err != nil {
		return err
	}
	if !p.Scope.Basins.Matches(basin) {
		return refused(ReasonResource, "token %q may not %s on basin %q", p.Name(), op, basin)
	}
	return nil
}

// CheckStream checks that p may do op on the stream of basin; stream is the full name (see
// StreamName).
func (p *Principal) CheckStream(op Operation, basin, stream string) error {
	if err := p.CheckBasin(op, basin); err != nil {
		return err
	}
	if !p.Scope.Streams.Matches(stream) {
		return refused(ReasonResource, "token %q may not %s on stream %q", p.Name(), op, p.Relative(stream))
	}
	return nil
}

// CheckToken checks that p may do op on the token id.
func (p *Principal) CheckToken(op Operation, id string) error {
	if err := p.checkOp(op); err != nil {
		return err
	}
	if !p.Scope.AccessTokens.Matches(id) {
		return refused(ReasonResource, "token %q may not %s on access token %q", p.Name(), op, id)
	}
	return nil
}

// CheckOp checks that p may do op at all, for calls whose resource is checked later.
func (p *Principal) CheckOp(op Operation) error { return p.checkOp(op) }

// streamPrefix is what auto-prefixing puts before stream names ("" without it).
func (p *Principal) streamPrefix() string {
	if p.AutoPrefixStreams && p.Scope.Streams.Kind == Prefix {
		return p.Scope.Streams.Name
	}
	return ""
}

// StreamName returns the full name of the stream a call names: with auto_prefix_streams,
// the scope's prefix and then name; else name.
func (p *Principal) StreamName(name string) string { return p.streamPrefix() + name }

// Relative returns the name a call of p's sees for the full stream name: without the
// auto-prefix (names outside it are returned whole).
func (p *Principal) Relative(full string) string {
	return strings.TrimPrefix(full, p.streamPrefix())
}
