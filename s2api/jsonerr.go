package s2api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// BadJSON is the bad_json error for a request body (what: "append body", "stream config",
// ...) that encoding/json refused, in the request's terms: which field has the wrong kind of
// value ("append body: records must be an array, not a string"), or where the syntax breaks,
// never Go's type names. err stays wrapped.
func BadJSON(what string, err error) *Error {
	return &Error{Code: CodeBadJSON, Message: what + ": " + describeJSONError(err), Err: err}
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(te.Type), jsonValueKind(te.Value))
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "not valid JSON: it ends early"
	}
	// The errors of this package's own UnmarshalJSON methods, which speak of the request.
	return err.Error()
}

// jsonKind names what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return "a string"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", ^uint64(0)>>(64-t.Bits()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a different value"
}

// jsonValueKind names a json.UnmarshalTypeError's Value ("string", "number -1", ...).
func jsonValueKind(v string) string {
	switch {
	case v == "array", v == "object":
		return "an " + v
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number"):
		if n := strings.TrimSpace(strings.TrimPrefix(v, "number")); n != "" {
			return n
		}
		return "a number"
	case v == "":
		return "that"
	}
	return "a " + v
}
