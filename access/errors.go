package access

import (
	"errors"
	"fmt"
)

// Sentinels of a refusal's class. Every *RefusedError matches one of them with errors.Is.
var (
	// ErrUnauthenticated: no token, or one that is unknown, revoked or expired (S2's 401
	// "authn").
	ErrUnauthenticated = errors.New("access: unauthenticated")
	// ErrDenied: a valid token whose scope does not grant the call (S2's 403
	// "permission_denied").
	ErrDenied = errors.New("access: permission denied")
	// ErrTokenExists: a token with the id already exists (S2's 409).
	ErrTokenExists = errors.New("access: access token already exists")
	// ErrTokenNotFound: no token with the id (revoke of an unknown id).
	ErrTokenNotFound = errors.New("access: access token not found")
	// ErrOff: the authorizer has no store for tokens.
	ErrOff = errors.New("access: access tokens are off")
)

// Reason says why a call was refused; it labels the refusal metrics.
type Reason string

// Refusal reasons.
const (
	ReasonNoToken      Reason = "no_token"      // no bearer token
	ReasonUnknownToken Reason = "unknown_token" // not a token this store issued
	ReasonRevoked      Reason = "revoked"       // a token that was valid and is revoked
	ReasonExpired      Reason = "expired"       // past its expiry
	ReasonOperation    Reason = "operation"     // the scope does not grant the operation
	ReasonResource     Reason = "resource"      // the basin, stream or token id is outside the scope
	ReasonEscalation   Reason = "escalation"    // an issue asks for more than its issuer has
)

// Reasons lists every reason, for metrics.
var Reasons = []Reason{ReasonNoToken, ReasonUnknownToken, ReasonRevoked, ReasonExpired,
	ReasonOperation, ReasonResource, ReasonEscalation}

// RefusedError is a refused call. Its message names the operation and resource refused and
// never holds a secret.
type RefusedError struct {
	Reason Reason
	Msg    string
}

func (e *RefusedError) Error() string { return "access: " + string(e.Reason) + ": " + e.Msg }

// Unwrap returns ErrUnauthenticated or ErrDenied.
func (e *RefusedError) Unwrap() error {
	switch e.Reason {
	case ReasonNoToken, ReasonUnknownToken, ReasonRevoked, ReasonExpired:
		return ErrUnauthenticated
	}
	return ErrDenied
}

func refused(r Reason, format string, args ...any) *RefusedError {
	return &RefusedError{Reason: r, Msg: fmt.Sprintf(format, args...)}
}
