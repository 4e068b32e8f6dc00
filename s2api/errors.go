package s2api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sluice-dev/sluice/batchfmt"
)

// Code is one of S2's error codes, as sent in the "code" field of an error body.
type Code string

// S2's error codes. The comment gives the HTTP status each one is sent with (see Code.Status).
const (
	CodeBadHeader             Code = "bad_header"              // 400
	CodeBadJSON               Code = "bad_json"                // 400
	CodeBadProto              Code = "bad_proto"               // 400
	CodeBadFrame              Code = "bad_frame"               // 400
	CodeBadPath               Code = "bad_path"                // 400
	CodeBadQuery              Code = "bad_query"               // 400
	CodeAuthn                 Code = "authn"                   // 401
	CodePermissionDenied      Code = "permission_denied"       // 403
	CodeBasinNotFound         Code = "basin_not_found"         // 404
	CodeStreamNotFound        Code = "stream_not_found"        // 404
	CodeNotFound              Code = "not_found"               // 404, unknown route (sluice's own)
	CodeMethodNotAllowed      Code = "method_not_allowed"      // 405 (sluice's own)
	CodeRequestTimeout        Code = "request_timeout"         // 408
	CodeResourceAlreadyExists Code = "resource_already_exists" // 409
	CodeTransactionConflict   Code = "transaction_conflict"    // 409
	CodeRequestTooLarge       Code = "request_too_large"       // 413 (sluice's own)
	CodeInvalid               Code = "invalid"                 // 422
	CodeRateLimited           Code = "rate_limited"            // 429
	CodeStorage               Code = "storage"                 // 500
	CodeOther                 Code = "other"                   // 500
	CodeUnavailable           Code = "unavailable"             // 503
	CodeUpstreamTimeout       Code = "upstream_timeout"        // 504
)

var codeStatus = map[Code]int{
	CodeBadHeader:             http.StatusBadRequest,
	CodeBadJSON:               http.StatusBadRequest,
	CodeBadProto:              http.StatusBadRequest,
	CodeBadFrame:              http.StatusBadRequest,
	CodeBadPath:               http.StatusBadRequest,
	CodeBadQuery:              http.StatusBadRequest,
	CodeAuthn:                 http.StatusUnauthorized,
	CodePermissionDenied:      http.StatusForbidden,
	CodeBasinNotFound:         http.StatusNotFound,
	CodeStreamNotFound:        http.StatusNotFound,
	CodeNotFound:              http.StatusNotFound,
	CodeGroupNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed:      http.StatusMethodNotAllowed,
	CodeRequestTimeout:        http.StatusRequestTimeout,
	CodeResourceAlreadyExists: http.StatusConflict,
	CodeTransactionConflict:   http.StatusConflict,
	CodeRequestTooLarge:       http.StatusRequestEntityTooLarge,
	CodeInvalid:               http.StatusUnprocessableEntity,
	CodeRateLimited:           http.StatusTooManyRequests,
	CodeStorage:               http.StatusInternalServerError,
	CodeOther:                 http.StatusInternalServerError,
	CodeUnavailable:           http.StatusServiceUnavailable,
	CodeUpstreamTimeout:       http.StatusGatewayTimeout,
}

// Status is the HTTP status S2 sends with the code; 500 for a code it does not know.
func (c Code) Status() int {
	if s, ok := codeStatus[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Malformed reports whether the code says the client sent bytes that could not be decoded
// (the corruption class of this package: bad_json, bad_proto, bad_frame).
func (c Code) Malformed() bool {
	return c == CodeBadJSON || c == CodeBadProto || c == CodeBadFrame
}

// Error is an API error with one of S2's codes. Backends return it (or wrap it, or wrap their
// own errors in it through Err) so that the server sends the right status and body.
//
// errors.Is(err, target) holds for a target *Error with the same Code and an empty Message, so
// the sentinels below match every error of their code.
type Error struct {
	Code    Code
	Message string
	Err     error // the cause, if any; not sent to clients
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Code)
	}
	if e.Err != nil {
		return "s2api: " + string(e.Code) + ": " + msg + ": " + e.Err.Error()
	}
	return "s2api: " + string(e.Code) + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches a sentinel *Error (empty Message) of the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Code == e.Code
}

// Sentinels, one per code a backend commonly returns. Match with errors.Is; return them
// wrapped (fmt.Errorf("%w: ...", ErrStreamNotFound)) or as an *Error with a message.
var (
	ErrBasinNotFound       = &Error{Code: CodeBasinNotFound}
	ErrStreamNotFound      = &Error{Code: CodeStreamNotFound}
	ErrAlreadyExists       = &Error{Code: CodeResourceAlreadyExists}
	ErrTransactionConflict = &Error{Code: CodeTransactionConflict}
	ErrInvalid             = &Error{Code: CodeInvalid}
	ErrPermissionDenied    = &Error{Code: CodePermissionDenied}
	ErrRateLimited         = &Error{Code: CodeRateLimited}
	ErrStorage             = &Error{Code: CodeStorage}
	ErrUnavailable         = &Error{Code: CodeUnavailable}
	ErrUpstreamTimeout     = &Error{Code: CodeUpstreamTimeout}
)

// SeqNumMismatchError is a failed match_seq_num condition: 412 {"seq_num_mismatch": Expected}.
type SeqNumMismatchError struct {
	Expected uint64 // the stream's tail seq_num, which the append would have had to match
}

func (e *SeqNumMismatchError) Error() string {
	return fmt.Sprintf("s2api: seq_num mismatch: the next seq_num is %d", e.Expected)
}

// FencingTokenMismatchError is a failed fencing_token condition: 412 {"fencing_token_mismatch": Actual}.
type FencingTokenMismatchError struct {
	Actual string // the stream's current fencing token
}

func (e *FencingTokenMismatchError) Error() string {
	return fmt.Sprintf("s2api: fencing token mismatch: the stream's token is %q", e.Actual)
}

// RangeNotSatisfiableError is a read whose start lies past the tail, without clamp:
// 416 {"tail": Tail}.
type RangeNotSatisfiableError struct {
	Tail StreamPosition
}

func (e *RangeNotSatisfiableError) Error() string {
	return fmt.Sprintf("s2api: read start is past the tail (seq_num %d)", e.Tail.SeqNum)
}

// ErrorInfo is the body of most error responses.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorResponse maps any error to the status and JSON body S2 sends for it:
//   - *SeqNumMismatchError, *FencingTokenMismatchError: 412 with their condition body;
//   - *RangeNotSatisfiableError: 416 {"tail":…};
//   - *GroupFencedError: 412 {"code":"group_fenced",…} (sluice's own, see groups.go);
//   - *Error: its code's status and {"code","message"};
//   - framing errors (ErrFrame): 400 bad_frame;
//   - batchfmt validation errors: 422 invalid;
//   - context.DeadlineExceeded and context.Canceled: 408 request_timeout;
//   - anything else: 500 other.
func ErrorResponse(err error) (status int, body []byte) {
	var sm *SeqNumMismatchError
	var fm *FencingTokenMismatchError
	var rn *RangeNotSatisfiableError
	var gf *GroupFencedError
	var ae *Error
	var b []byte
	switch {
	case err == nil:
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorInfo{Code: string(CodeOther), Message: "unknown error"})
	case errors.As(err, &sm):
		status = http.StatusPreconditionFailed
		b, _ = json.Marshal(map[string]uint64{"seq_num_mismatch": sm.Expected})
	case errors.As(err, &fm):
		status = http.StatusPreconditionFailed
		b, _ = json.Marshal(map[string]string{"fencing_token_mismatch": fm.Actual})
	case errors.As(err, &rn):
		status = http.StatusRequestedRangeNotSatisfiable
		b, _ = json.Marshal(TailResponse{Tail: rn.Tail})
	case errors.As(err, &gf):
		status, b = gf.response()
	case errors.As(err, &ae):
		msg := ae.Message
		if msg == "" {
			msg = string(ae.Code)
		}
		status = ae.Code.Status()
		b, _ = json.Marshal(ErrorInfo{Code: string(ae.Code), Message: msg})
	case errors.Is(err, ErrFrame):
		status = http.StatusBadRequest
		b, _ = json.Marshal(ErrorInfo{Code: string(CodeBadFrame), Message: err.Error()})
	case errors.Is(err, batchfmt.ErrInvalid):
		status = http.StatusUnprocessableEntity
		b, _ = json.Marshal(ErrorInfo{Code: string(CodeInvalid), Message: err.Error()})
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		status = http.StatusRequestTimeout
		b, _ = json.Marshal(ErrorInfo{Code: string(CodeRequestTimeout), Message: err.Error()})
	default:
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorInfo{Code: string(CodeOther), Message: err.Error()})
	}
	return status, b
}

// DecodeErrorBody parses an error body of the given status back into a typed error: the
// inverse of ErrorResponse, for clients and tests.
func DecodeErrorBody(status int, body []byte) error {
	switch status {
	case http.StatusPreconditionFailed:
		if gf, ok := decodeGroupFenced(body); ok {
			return gf
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return &Error{Code: CodeBadJSON, Message: "412 body is not a JSON object", Err: err}
		}
		if raw, ok := m["seq_num_mismatch"]; ok {
			var n uint64
			if err := json.Unmarshal(raw, &n); err != nil {
				return &Error{Code: CodeBadJSON, Message: "bad seq_num_mismatch", Err: err}
			}
			return &SeqNumMismatchError{Expected: n}
		}
		if raw, ok := m["fencing_token_mismatch"]; ok {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return &Error{Code: CodeBadJSON, Message: "bad fencing_token_mismatch", Err: err}
			}
			return &FencingTokenMismatchError{Actual: s}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		var t TailResponse
		if err := json.Unmarshal(body, &t); err == nil {
			return &RangeNotSatisfiableError{Tail: t.Tail}
		}
	}
	var info ErrorInfo
	if err := json.Unmarshal(body, &info); err != nil || info.Code == "" {
		return &Error{Code: CodeOther, Message: fmt.Sprintf("status %d: %s", status, body)}
	}
	return &Error{Code: Code(info.Code), Message: info.Message}
}
