package main

// The JSON shape of records on stdin (append) and stdout (read).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sluice-dev/sluice/batchfmt"
)

// recordJSON is one record as a JSON line:
//
//	{"seq_num":N,"timestamp":T,"headers":[["name","value"],...],"body":"..."}
//
// In the json format the header names and values and the body are UTF-8 strings; in the
// base64 format they are standard base64 (so any bytes survive). seq_num is written by read
// and ignored by append, so that read's output can be appended to another stream.
type recordJSON struct {
	SeqNum    *uint64    `json:"seq_num,omitempty"`
	Timestamp *uint64    `json:"timestamp,omitempty"`
	Headers   [][]string `json:"headers"`
	Body      string     `json:"body"`
}

// recordJSONIn is recordJSON as append reads it: pointers, so that a null name, value or
// body is refused instead of read as "".
type recordJSONIn struct {
	SeqNum    *uint64     `json:"seq_num,omitempty"`
	Timestamp *uint64     `json:"timestamp,omitempty"`
	Headers   [][]*string `json:"headers"`
	Body      *string     `json:"body"`
}

// parseJSONRecord parses one JSON line into a record; b64 says the strings are base64.
func parseJSONRecord(line []byte, b64 bool) (batchfmt.Record, error) {
	if trimmed := bytes.TrimSpace(line); len(trimmed) == 0 || trimmed[0] != '{' {
		return batchfmt.Record{}, errors.New(`not a JSON record {"headers":[["name","value"]],"body":"...","timestamp":N}: want an object`)
	}
	if bytes.Contains(line, []byte("null")) && bodyIsNull(line) {
		return batchfmt.Record{}, errors.New("body is null: want a string, or leave it out for an empty body")
	}
	var rj recordJSONIn
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rj); err != nil {
		return batchfmt.Record{}, fmt.Errorf(`not a JSON record {"headers":[["name","value"]],"body":"...","timestamp":N}: %w`, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return batchfmt.Record{}, errors.New("trailing data after the JSON record")
	}
	// decode's error is wrapped by the caller, so that a field's label is built only when
	// it fails.
	decode := func(s string) ([]byte, error) {
		if !b64 {
			return []byte(s), nil
		}
		return base64.StdEncoding.DecodeString(s)
	}
	var rec batchfmt.Record
	if rj.Timestamp != nil {
		rec.Timestamp, rec.HasTimestamp = *rj.Timestamp, true
	}
	for i, h := range rj.Headers {
		if len(h) != 2 {
			return batchfmt.Record{}, fmt.Errorf("header %d: want a [name, value] pair, got %d strings", i, len(h))
		}
		if h[0] == nil || h[1] == nil {
			return batchfmt.Record{}, fmt.Errorf("header %d: a name or value is null: want strings", i)
		}
		n, err := decode(*h[0])
		if err != nil {
			return batchfmt.Record{}, fmt.Errorf("header %d name is not base64: %w", i, err)
		}
		v, err := decode(*h[1])
		if err != nil {
			return batchfmt.Record{}, fmt.Errorf("header %d value is not base64: %w", i, err)
		}
		rec.Headers = append(rec.Headers, batchfmt.Header{Name: n, Value: v})
	}
	var bodyText string
	if rj.Body != nil {
		bodyText = *rj.Body
	}
	body, err := decode(bodyText)
	if err != nil {
		return batchfmt.Record{}, fmt.Errorf("body is not base64: %w", err)
	}
	rec.Body = body
	return rec, nil
}

// bodyIsNull reports whether the JSON object in line has "body": null (which decoding into
// *string cannot tell from a missing body).
func bodyIsNull(line []byte) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(line, &fields) != nil {
		return false // the decoder reports it
	}
	v, ok := fields["body"]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

// parseLine turns one stdin line (without its '\n') into a record, per --format:
// raw: the line is the body; json: a JSON record with UTF-8 strings; base64: either the base64
// of the body, or (when it starts with '{') a JSON record whose strings are base64.
func parseLine(format string, line []byte) (batchfmt.Record, error) {
	switch format {
	case "raw":
		return batchfmt.Record{Body: bytes.Clone(line)}, nil
	case "json":
		return parseJSONRecord(line, false)
	case "base64":
		if len(line) > 0 && line[0] == '{' {
			return parseJSONRecord(line, true)
		}
		b, err := base64.StdEncoding.DecodeString(string(bytes.TrimSuffix(line, []byte("\r"))))
		if err != nil {
			return batchfmt.Record{}, fmt.Errorf("not base64: %w", err)
		}
		return batchfmt.Record{Body: b}, nil
	}
	return batchfmt.Record{}, fmt.Errorf("unknown format %q", format)
}

// encodeRecord renders a read record as JSON (b64: strings in base64).
func encodeRecord(seq, ts uint64, r batchfmt.Record, b64 bool) recordJSON {
	enc := func(b []byte) string {
		if b64 {
			return base64.StdEncoding.EncodeToString(b)
		}
		return string(b)
	}
	out := recordJSON{SeqNum: &seq, Timestamp: &ts, Headers: make([][]string, 0, len(r.Headers)), Body: enc(r.Body)}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, []string{enc(h.Name), enc(h.Value)})
	}
	return out
}

// splitLines is bufio.ScanLines without dropping '\r': in raw format a line's bytes are the
// record's body, exactly.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
