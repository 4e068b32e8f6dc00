// Package access is who may do what on a sluice daemon: S2's access tokens.
//
// # Model
//
// A token has an id (1 to 96 bytes), a scope, an optional expiry and an auto-prefix flag, as
// S2's documentation defines them. A scope has three resource sets, for basins, streams and
// token ids, each exact (one name; the empty exact name matches nothing), prefix (the empty
// prefix matches all) or absent (nothing). It grants operations (S2's names: list-basins,
// create-stream, append, read, trim, issue-access-token, ...) one by one and by group
// (account, basin, stream; read, write); the operations allowed are the union of both. See
// Operation.Class for which group holds which operation.
//
// A call is allowed when its operation is granted and its basin, stream and token id (those
// it names) are in the scope's sets; listings show only what the sets match. A token issues
// only scopes within its own (its operations, and each set within its set) and only expiries
// no later than its own, which the new token's expiry defaults to. With auto_prefix_streams
// (which needs a stream prefix) the stream names of calls are relative to the prefix: the
// server adds it to names it is given and strips it from names it answers with. The scope
// given when issuing names streams in full.
//
// The root token (the daemon's --auth-token) can do everything, and is how the first tokens
// are issued. It is not stored; it never expires.
//
// # Storage and secrets
//
// Tokens live in the object store, one object each at KeyPrefix + hex(id), so that every
// daemon on the bucket sees them. The secret is "sl1.<base64url(id)>.<base64url(32 random
// bytes)>", returned once by Issue; the object holds a salt and HMAC-SHA256(salt, secret),
// never the secret, and secrets are compared in constant time. Nothing in this package logs,
// and no error or message holds a secret.
//
// # Staleness
//
// The Authorizer trusts what it read of a token for its refresh interval (5 s by default):
// a revocation through another daemon on the store is seen by every daemon within that
// interval, and at once by the daemon that revoked. Principal.Revoked lets a live session
// end as soon as its authorizer learns of the revocation.
package access
