// Package server serves S2's REST API v1 (see package s2api for the wire formats) over a
// Backend: the engine (engine.Engine.S2), in production as in the tests, where it runs on a
// memory store.
//
// # Routes
//
// Every route is served under /v1 and at the root. Stream routes take the basin from the
// S2-Basin header. Path segments are unescaped one by one, so "a%2Fb" names the stream "a/b".
//
//	POST   /basins                       create basin                 201 BasinInfo
//	GET    /basins?prefix&start_after&limit                           200 {basins,has_more}
//	GET    /basins/{b}                   basin config                 200 BasinConfig
//	PATCH  /basins/{b}                   reconfigure basin            200 BasinConfig
//	PUT    /basins/{b}                   ensure basin                 201|200 BasinInfo
//	DELETE /basins/{b}                   delete basin                 202
//	POST   /streams                      create stream                201 StreamInfo
//	GET    /streams?prefix&start_after&limit                          200 {streams,has_more}
//	GET    /streams/{s}                  stream config                200 StreamConfig
//	PATCH  /streams/{s}                  reconfigure stream           200 StreamConfig
//	PUT    /streams/{s}                  ensure stream (bare config   201|200 StreamInfo
//	                                     or S2's documented {stream,config})
//	DELETE /streams/{s}                  delete stream                202
//	GET    /streams/{s}/records/tail     check tail (also /tail)      200 {tail}
//	POST   /streams/{s}/records          append: JSON (S2-Format raw|base64) or
//	                                     application/protobuf         200 AppendAck
//	                                     Content-Type s2s/proto: append session
//	GET    /streams/{s}/records?seq_num|timestamp|tail_offset&clamp&count&bytes&until&wait
//	                                     unary read, JSON or (Accept) protobuf; 200 ReadBatch
//	                                     Accept text/event-stream: SSE read session
//	                                     Content-Type s2s/proto: S2S read session
//	GET    /access-tokens?prefix&start_after&limit                    200 {access_tokens,has_more}
//	POST   /access-tokens                issue access token           201 {access_token}
//	DELETE /access-tokens/{id}           revoke access token          204
//
// sluice's own consumer-group routes (groups.go; not S2's, with a GroupBackend):
//
//	GET    /streams/{s}/groups           groups with lag              200 {groups}
//	POST   /streams/{s}/groups/{g}/join  join as the one member       200 JoinGroupResponse
//	POST   /streams/{s}/groups/{g}/ack   move the checkpoint          200 AckGroupResponse
//	                                     (stale epoch: 412 group_fenced)
//	POST   /streams/{s}/groups/{g}/reset reset the checkpoint         200 ResetGroupResponse
//	DELETE /streams/{s}/groups/{g}       delete the group             202
//
// # Access
//
// With WithAccess, every call carries a bearer token: the root token, or one issued through
// the /access-tokens routes (see package access). Before its handler runs, a call's
// operation (one per route and method; an append needs append, trim or fence for each of its
// records) is checked against the token's scope on the basin, stream or token id it names;
// names in bodies are checked where they are decoded, and listings show only what the scope
// matches. auto_prefix_streams adds the scope's stream prefix to stream names and strips it
// from answers. A refusal is 401 authn (no, unknown, revoked or expired token) or 403
// permission_denied, counted in sluice_api_access_refusals_total{reason}. A call still
// running when its token is revoked or expires (a session, a long poll) ends with that
// refusal: a terminal frame, an SSE error event, or the unary answer. WithBearerToken
// instead grants its one token everything.
//
// Errors before a session starts are HTTP statuses with S2's bodies (s2api.ErrorResponse).
// Once an S2S session has started, an error is a terminal frame (status + JSON body); once an
// SSE session has started, an "error" event (which the SDK retries). Every 5xx is logged
// once, with its cause, through WithLogger's logger (Error for a 500, Warn for the others);
// the answer hides the cause.
//
// # Sessions
//
// A read session sends batches of at most 1000 records / 1 MiB. When it catches up with the
// tail it sends a batch whose tail is the next position (empty if need be): the SDK's
// "caught up" signal. While idle it sends a heartbeat every heartbeat interval (default 10 s,
// at most 15 s): an empty ReadBatch with the tail over S2S, a "ping" event over SSE. It ends
// (by ending the body) when count or bytes is reached, when a record at or after until comes,
// or after wait seconds without records (default: 0 if any of count, bytes, until is given,
// else never). SSE batches carry the id "<last seq_num>,<records so far>,<bytes so far>" and a
// Last-Event-ID resumes after it.
//
// An append session answers each AppendInput frame with one AppendAck frame, in order; a failed
// append (condition, validation, storage) is a terminal frame and ends the session.
//
// # Resources
//
// Unary bodies are limited (WithMaxBodyBytes), S2S frames to 2 MiB. Every write of a session
// has a deadline (WithWriteTimeout), so a client that stops reading is disconnected and holds
// at most one batch of memory; a session is one handler goroutine (owned by net/http) that
// Close cancels and waits for. With create_stream_on_append / create_stream_on_read set on
// the basin, a missing stream is created (with the S2-Stream-Config header's config, if any)
// and the call retried once.
//
// HTTPServer returns an *http.Server that speaks HTTP/1.1 and cleartext HTTP/2 (prior
// knowledge) on one port, which S2's Node SDK needs for S2S sessions.
package server
