package s2api

import "time"

// The JSON bodies of S2's access-token routes (POST /access-tokens, GET /access-tokens,
// DELETE /access-tokens/{id}). They carry the scope as S2 sends it; package access turns it
// into its model and checks it.

// ResourceSet names a set of basins, streams or access-token ids: exactly one of Exact (one
// name; "" matches nothing) and Prefix (every name that starts with it; "" matches all).
type ResourceSet struct {
	Exact  *string `json:"exact,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
}

// ReadWritePermissions grants an operation group's read and write operations.
type ReadWritePermissions struct {
	Read  bool `json:"read"`
	Write bool `json:"write"`
}

// PermittedOperationGroups grants operation groups (account, basin, stream).
type PermittedOperationGroups struct {
	Account *ReadWritePermissions `json:"account,omitempty"`
	Basin   *ReadWritePermissions `json:"basin,omitempty"`
	Stream  *ReadWritePermissions `json:"stream,omitempty"`
}

// AccessTokenScope is what a token may do: on which resources (a nil set matches none), and
// which operations (the union of Ops and the operations of OpGroups).
type AccessTokenScope struct {
	Basins       *ResourceSet              `json:"basins,omitempty"`
	Streams      *ResourceSet              `json:"streams,omitempty"`
	AccessTokens *ResourceSet              `json:"access_tokens,omitempty"`
	OpGroups     *PermittedOperationGroups `json:"op_groups,omitempty"`
	Ops          []string                  `json:"ops,omitempty"`
}

// IssueAccessTokenRequest is the body of POST /access-tokens.
type IssueAccessTokenRequest struct {
	ID string `json:"id"`
	// ExpiresAt (RFC 3339) defaults to the issuer's expiry and may not exceed it.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// AutoPrefixStreams prefixes stream names with the scope's stream prefix, and strips it
	// from listed names.
	AutoPrefixStreams *bool            `json:"auto_prefix_streams,omitempty"`
	Scope             AccessTokenScope `json:"scope"`
}

// IssueAccessTokenResponse is the 201 answer to an issue: the token, shown this once.
type IssueAccessTokenResponse struct {
	AccessToken string `json:"access_token"`
}

// AccessTokenInfo describes an issued token, never its secret.
type AccessTokenInfo struct {
	ID                string           `json:"id"`
	ExpiresAt         *time.Time       `json:"expires_at"`
	AutoPrefixStreams bool             `json:"auto_prefix_streams"`
	Scope             AccessTokenScope `json:"scope"`
}

// ListAccessTokensResponse is the answer to GET /access-tokens?prefix&start_after&limit.
type ListAccessTokensResponse struct {
	AccessTokens []AccessTokenInfo `json:"access_tokens"`
	HasMore      bool              `json:"has_more"`
}
