package access

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
)

// KeyPrefix is where tokens live in the store: one object per token, at KeyPrefix followed
// by the lower-case hex of the id's bytes (an encoding that keeps the ids' byte order and
// prefixes, so that listing by id prefix is listing by key prefix).
const KeyPrefix = "access-tokens/"

// MaxIDLen is the longest token id, in bytes (S2's limit).
const MaxIDLen = 96

// ValidateID checks S2's rule for token ids: 1 to 96 bytes, no NUL. sluice also wants valid
// UTF-8, as JSON carries the id.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: access token id is empty", ErrInvalidScope)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: access token id is %d bytes, more than %d", ErrInvalidScope, len(id), MaxIDLen)
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%w: access token id holds a NUL byte", ErrInvalidScope)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: access token id is not valid UTF-8", ErrInvalidScope)
	}
	return nil
}

func tokenKey(id string) string { return KeyPrefix + hex.EncodeToString([]byte(id)) }

// Token is an issued token as stored: everything but its secret.
type Token struct {
	ID                string
	Scope             Scope
	ExpiresAt         time.Time // zero: never
	AutoPrefixStreams bool
	IssuedAt          time.Time
	IssuedBy          string // the issuer's id, "root" for the root token

	salt, hash []byte
}

// Info returns the token as S2's list shows it.
func (t *Token) Info() s2api.AccessTokenInfo {
	info := s2api.AccessTokenInfo{ID: t.ID, AutoPrefixStreams: t.AutoPrefixStreams, Scope: t.Scope.Wire()}
	if !t.ExpiresAt.IsZero() {
		e := t.ExpiresAt.UTC()
		info.ExpiresAt = &e
	}
	return info
}

// principal returns the token's principal.
func (t *Token) principal(revoked <-chan struct{}) *Principal {
	return &Principal{ID: t.ID, Scope: t.Scope, ExpiresAt: t.ExpiresAt, AutoPrefixStreams: t.AutoPrefixStreams, revoked: revoked}
}

// record is a token's object (JSON).
type record struct {
	Version           int                    `json:"version"`
	ID                string                 `json:"id"`
	Scope             s2api.AccessTokenScope `json:"scope"`
	ExpiresAt         *time.Time             `json:"expires_at,omitempty"`
	AutoPrefixStreams bool                   `json:"auto_prefix_streams"`
	IssuedAt          time.Time              `json:"issued_at"`
	IssuedBy          string                 `json:"issued_by"`
	Salt              []byte                 `json:"salt"`
	Hash              []byte                 `json:"hash"` // HMAC-SHA256(salt, secret)
}

const recordVersion = 1

// ErrCorrupt: a token object that does not decode. It is never taken for a missing token.
var ErrCorrupt = errors.New("access: corrupt token object")

func encodeToken(t *Token) ([]byte, error) {
	r := record{Version: recordVersion, ID: t.ID, Scope: t.Scope.Wire(), AutoPrefixStreams: t.AutoPrefixStreams,
		IssuedAt: t.IssuedAt.UTC(), IssuedBy: t.IssuedBy, Salt: t.salt, Hash: t.hash}
	if !t.ExpiresAt.IsZero() {
		e := t.ExpiresAt.UTC()
		r.ExpiresAt = &e
	}
	return json.Marshal(r)
}

func decodeToken(key string, b []byte) (*Token, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	if r.Version != recordVersion || tokenKey(r.ID) != key || len(r.Salt) == 0 || len(r.Hash) == 0 {
		return nil, fmt.Errorf("%w: %s: version %d, id %q", ErrCorrupt, key, r.Version, r.ID)
	}
	sc, err := ScopeFromWire(r.Scope)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	t := &Token{ID: r.ID, Scope: sc, AutoPrefixStreams: r.AutoPrefixStreams, IssuedAt: r.IssuedAt,
		IssuedBy: r.IssuedBy, salt: r.Salt, hash: r.Hash}
	if r.ExpiresAt != nil {
		t.ExpiresAt = *r.ExpiresAt
	}
	return t, nil
}

// tokens is the token objects of a store.
type tokens struct{ s objectstore.Store }

// create writes t create-only. A write whose outcome is unknown is settled by reading the
// object back: ours (our hash) is a success.
func (ts tokens) create(ctx context.Context, t *Token) error {
	b, err := encodeToken(t)
	if err != nil {
		return err
	}
	_, err = objectstore.PutBytes(ctx, ts.s, tokenKey(t.ID), b, objectstore.IfAbsent())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, objectstore.ErrPreconditionFailed):
		return fmt.Errorf("%w: %q", ErrTokenExists, t.ID)
	case errors.Is(err, objectstore.ErrOutcomeUnknown):
		got, gerr := ts.get(ctx, t.ID)
		if gerr != nil {
			return err
		}
		if string(got.hash) == string(t.hash) {
			return nil
		}
		return fmt.Errorf("%w: %q", ErrTokenExists, t.ID)
	}
	return err
}

// get reads the token id; ErrTokenNotFound if there is none.
func (ts tokens) get(ctx context.Context, id string) (*Token, error) {
	key := tokenKey(id)
	b, _, err := objectstore.ReadAll(ctx, ts.s, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrTokenNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	return decodeToken(key, b)
}

// remove deletes the token id (absent: done).
func (ts tokens) remove(ctx context.Context, id string) error {
	return ts.s.Delete(ctx, tokenKey(id))
}

// list returns up to limit tokens whose ids start with prefix and sort after startAfter,
// in id order, and whether more follow.
func (ts tokens) list(ctx context.Context, prefix, startAfter string, limit int) ([]*Token, bool, error) {
	kp := tokenKey(prefix)
	after := ""
	if startAfter != "" {
		after = tokenKey(startAfter)
	}
	var out []*Token
	for {
		page, err := ts.s.List(ctx, kp, after, limit+1-len(out))
		if err != nil {
			return nil, false, err
		}
		for _, o := range page.Objects {
			if len(out) == limit {
				return out, true, nil
			}
			b, _, err := objectstore.ReadAll(ctx, ts.s, o.Key)
			if errors.Is(err, objectstore.ErrNotFound) {
				continue // revoked since the listing
			}
			if err != nil {
				return nil, false, err
			}
			t, err := decodeToken(o.Key, b)
			if err != nil {
				return nil, false, err
			}
			out = append(out, t)
		}
		if page.NextStartAfter == "" {
			return out, false, nil
		}
		after = page.NextStartAfter
	}
}
