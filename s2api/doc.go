// Package s2api holds the wire formats of S2's REST API v1, as sluice serves it: the JSON
// bodies, the protobuf messages of package s2.v1, the S2S session framing, the SSE events of
// read sessions, the read query, and the error codes with their HTTP statuses.
//
// It does no I/O beyond the io.Reader/io.Writer it is handed and keeps no state: the server
// (package server) and clients use it to turn bytes into batchfmt records and back.
//
// # Contract
//
//   - Decoders never panic and never skip input silently: bytes that do not parse give an
//     *Error whose Code is bad_json, bad_proto or (errors.Is ErrFrame) bad_frame — the
//     corruption class of this package (Code.Malformed). Decoders do not apply the append
//     limits; batchfmt.AppendInput.Validate does.
//   - JSON: snake_case, timestamps in epoch milliseconds, created_at as RFC 3339. Append
//     bodies accept headers both as ["name","value"] pairs and as {"name","value"} objects;
//     responses always use pairs. S2-Format: raw (UTF-8 text, the default) or base64 (standard
//     base64 of names, values and bodies).
//   - Errors: ErrorResponse maps any error to S2's status and body — {"code","message"},
//     412 {"seq_num_mismatch":N} | {"fencing_token_mismatch":"…"}, 416 {"tail":{…}}.
//     Backends return *Error (or the sentinels, wrapped) and the typed condition errors.
//
// # Protobuf (package s2.v1)
//
//	StreamPosition  { 1 seq_num uint64; 2 timestamp uint64 }
//	Header          { 1 name bytes; 2 value bytes }
//	AppendRecord    { 1 optional timestamp uint64; 2 repeated Header headers; 3 body bytes }
//	AppendInput     { 1 repeated AppendRecord records; 2 optional match_seq_num uint64;
//	                  3 optional fencing_token string }
//	AppendAck       { 1 StreamPosition start; 2 StreamPosition end; 3 StreamPosition tail }
//	SequencedRecord { 1 seq_num uint64; 2 timestamp uint64; 3 repeated Header headers; 4 body bytes }
//	ReadBatch       { 1 repeated SequencedRecord records; 2 optional StreamPosition tail }
//
// # S2S framing
//
// An S2S session is a sequence of frames over one HTTP/2 (or HTTP/1.1) request/response body:
//
//	+----------------------+--------+---------------------------------------+
//	| length (3 bytes, BE) | flag   | body (length-1 bytes)                 |
//	| = 1 + len(body)      | 1 byte |                                       |
//	+----------------------+--------+---------------------------------------+
//
//	flag bits:  7    6 5   4    3 2 1 0
//	           [T] [ C C ] [A] [ 0 0 0 0 ]
//	T  terminal: the last frame of the session
//	CC compression of the body: 00 none, 01 zstd (0x20), 10 gzip (0x40), 11 invalid
//	A  reconnect advised (regular frames only)
//
// A regular frame's body is one protobuf message (ReadBatch from the server in a read
// session; AppendInput from the client and AppendAck from the server in an append session).
// A terminal frame is never compressed; its body is
//
//	+---------------------+-------------------------------+
//	| HTTP status (2, BE) | JSON error body (may be empty) |
//	+---------------------+-------------------------------+
//
// Frames are at most MaxFrameBytes (2 MiB) long, and so are decompressed bodies.
//
// # SSE
//
// See SSEWriter: events batch (id "<last seq_num>,<records so far>,<bytes so far>"), ping
// and error.
package s2api
