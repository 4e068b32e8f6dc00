package s2api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-dev/sluice/batchfmt"
)

// StreamPosition is a record's place in a stream: its seq_num and its timestamp (epoch ms).
// As a tail it is the next seq_num to be assigned and the timestamp of the last record.
type StreamPosition struct {
	SeqNum    uint64 `json:"seq_num"`
	Timestamp uint64 `json:"timestamp"`
}

// TailResponse is the body of check-tail and of a 416.
type TailResponse struct {
	Tail StreamPosition `json:"tail"`
}

// AppendAck acknowledges one append: records [Start.SeqNum, End.SeqNum) were written, and the
// stream's tail after the append was Tail.
type AppendAck struct {
	Start StreamPosition `json:"start"`
	End   StreamPosition `json:"end"`
	Tail  StreamPosition `json:"tail"`
}

// SequencedRecord is a stored record as read back.
type SequencedRecord struct {
	SeqNum    uint64
	Timestamp uint64
	Headers   []batchfmt.Header
	Body      []byte
}

// MeteredSize is the record's metered size, by the same formula as batchfmt.Record's.
func (r *SequencedRecord) MeteredSize() int {
	n := 8 + 2*len(r.Headers) + len(r.Body)
	for _, h := range r.Headers {
		n += len(h.Name) + len(h.Value)
	}
	return n
}

// ReadBatch is a run of consecutive records and, when known, the stream's tail.
type ReadBatch struct {
	Records []SequencedRecord
	Tail    *StreamPosition
}

// MeteredSize is the sum of the records' metered sizes.
func (b *ReadBatch) MeteredSize() int {
	n := 0
	for i := range b.Records {
		n += b.Records[i].MeteredSize()
	}
	return n
}

// Format says how header names, values and bodies are carried in JSON strings.
type Format int

const (
	// FormatRaw carries bytes as UTF-8 text (the default). Bytes that are not valid UTF-8
	// cannot be carried: encoding replaces them with U+FFFD.
	FormatRaw Format = iota
	// FormatBase64 carries bytes as standard base64 with padding.
	FormatBase64
)

func (f Format) String() string {
	if f == FormatBase64 {
		return "base64"
	}
	return "raw"
}

// ParseFormat reads the S2-Format header: "" or "raw" is FormatRaw, "base64" is FormatBase64.
func ParseFormat(h string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(h)) {
	case "", "raw":
		return FormatRaw, nil
	case "base64":
		return FormatBase64, nil
	}
	return FormatRaw, Errorf(CodeBadHeader, "S2-Format must be raw or base64, not %q", h)
}

func (f Format) decode(s string) ([]byte, error) {
	if f == FormatRaw {
		return []byte(s), nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		// Accept unpadded base64 as well; reject anything else.
		if b2, err2 := base64.RawStdEncoding.DecodeString(s); err2 == nil {
			return b2, nil
		}
		return nil, err
	}
	return b, nil
}

// badBase64 is the error for a field (what) that decode refused; the label is built only
// then, not for every field decoded.
func badBase64(what string, err error) error {
	return &Error{Code: CodeBadJSON, Message: fmt.Sprintf("%s is not valid base64", what), Err: err}
}

func (f Format) encode(b []byte) string {
	if f == FormatRaw {
		return string(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// jsonHeader accepts a header both as a ["name","value"] pair and as a
// {"name":…,"value":…} object, since S2's documents show both.
type jsonHeader struct {
	Name, Value string
}

func (h *jsonHeader) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var pair []string
		if err := json.Unmarshal(b, &pair); err != nil {
			return err
		}
		if len(pair) != 2 {
			return fmt.Errorf("a header pair must hold exactly 2 strings, found %d", len(pair))
		}
		h.Name, h.Value = pair[0], pair[1]
		return nil
	}
	var obj struct {
		Name  *string `json:"name"`
		Value *string `json:"value"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	if obj.Name == nil || obj.Value == nil {
		return fmt.Errorf("a header object must have string fields name and value")
	}
	h.Name, h.Value = *obj.Name, *obj.Value
	return nil
}

type jsonAppendRecord struct {
	Timestamp *uint64      `json:"timestamp"`
	Headers   []jsonHeader `json:"headers"`
	Body      *string      `json:"body"`
}

type jsonAppendInput struct {
	Records      *[]jsonAppendRecord `json:"records"`
	MatchSeqNum  *uint64             `json:"match_seq_num"`
	FencingToken *string             `json:"fencing_token"`
}

// DecodeAppendInputJSON parses an append body
//
//	{"records":[{"timestamp"?,"headers"?,"body"?}…],"match_seq_num"?,"fencing_token"?}
//
// with names, values and bodies in format f. Unknown fields are ignored; null equals absent.
// Syntax errors are *Error with CodeBadJSON. The result is not validated against the append
// limits: call Validate on it.
func DecodeAppendInputJSON(data []byte, f Format) (batchfmt.AppendInput, error) {
	var in jsonAppendInput
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&in); err != nil {
		return batchfmt.AppendInput{}, BadJSON("append body", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return batchfmt.AppendInput{}, &Error{Code: CodeBadJSON, Message: "append body: trailing data after the JSON value"}
	}
	if in.Records == nil {
		return batchfmt.AppendInput{}, &Error{Code: CodeBadJSON, Message: "append body: missing field records"}
	}
	out := batchfmt.AppendInput{
		Records:      make([]batchfmt.Record, len(*in.Records)),
		MatchSeqNum:  in.MatchSeqNum,
		FencingToken: in.FencingToken,
	}
	for i, jr := range *in.Records {
		r := &out.Records[i]
		if jr.Timestamp != nil {
			r.Timestamp, r.HasTimestamp = *jr.Timestamp, true
		}
		if len(jr.Headers) > 0 {
			r.Headers = make([]batchfmt.Header, len(jr.Headers))
			for j, h := range jr.Headers {
				name, err := f.decode(h.Name)
				if err != nil {
					return batchfmt.AppendInput{}, badBase64(fmt.Sprintf("records[%d].headers[%d].name", i, j), err)
				}
				value, err := f.decode(h.Value)
				if err != nil {
					return batchfmt.AppendInput{}, badBase64(fmt.Sprintf("records[%d].headers[%d].value", i, j), err)
				}
				r.Headers[j] = batchfmt.Header{Name: name, Value: value}
			}
		}
		if jr.Body != nil {
			body, err := f.decode(*jr.Body)
			if err != nil {
				return batchfmt.AppendInput{}, badBase64(fmt.Sprintf("records[%d].body", i), err)
			}
			r.Body = body
		}
	}
	return out, nil
}

// EncodeAppendInputJSON is the inverse of DecodeAppendInputJSON (headers as pairs), for
// clients and tests.
func EncodeAppendInputJSON(in *batchfmt.AppendInput, f Format) []byte {
	type rec struct {
		Timestamp *uint64     `json:"timestamp,omitempty"`
		Headers   [][2]string `json:"headers,omitempty"`
		Body      string      `json:"body"`
	}
	out := struct {
		Records      []rec   `json:"records"`
		MatchSeqNum  *uint64 `json:"match_seq_num,omitempty"`
		FencingToken *string `json:"fencing_token,omitempty"`
	}{Records: make([]rec, len(in.Records)), MatchSeqNum: in.MatchSeqNum, FencingToken: in.FencingToken}
	for i := range in.Records {
		r := &in.Records[i]
		if r.HasTimestamp {
			ts := r.Timestamp
			out.Records[i].Timestamp = &ts
		}
		for _, h := range r.Headers {
			out.Records[i].Headers = append(out.Records[i].Headers, [2]string{f.encode(h.Name), f.encode(h.Value)})
		}
		out.Records[i].Body = f.encode(r.Body)
	}
	b, _ := json.Marshal(out)
	return b
}

// EncodeReadBatchJSON renders a read batch as {"records":[{"seq_num","timestamp","headers",
// "body"}…],"tail"?}. Headers are [name,value] pairs; headers and body are always present
// (possibly empty), since the SDK hands an absent body on as undefined.
func EncodeReadBatchJSON(b *ReadBatch, f Format) []byte {
	return AppendReadBatchJSON(nil, b, f)
}

// DecodeReadBatchJSON parses a read batch (headers as pairs or objects), for clients and tests.
func DecodeReadBatchJSON(data []byte, f Format) (ReadBatch, error) {
	var in struct {
		Records []struct {
			SeqNum    uint64       `json:"seq_num"`
			Timestamp uint64       `json:"timestamp"`
			Headers   []jsonHeader `json:"headers"`
			Body      string       `json:"body"`
		} `json:"records"`
		Tail *StreamPosition `json:"tail"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return ReadBatch{}, BadJSON("read batch", err)
	}
	out := ReadBatch{Tail: in.Tail, Records: make([]SequencedRecord, len(in.Records))}
	for i, r := range in.Records {
		sr := SequencedRecord{SeqNum: r.SeqNum, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			n, err := f.decode(h.Name)
			if err != nil {
				return ReadBatch{}, badBase64("header name", err)
			}
			v, err := f.decode(h.Value)
			if err != nil {
				return ReadBatch{}, badBase64("header value", err)
			}
			sr.Headers = append(sr.Headers, batchfmt.Header{Name: n, Value: v})
		}
		body, err := f.decode(r.Body)
		if err != nil {
			return ReadBatch{}, badBase64("body", err)
		}
		sr.Body = body
		out.Records[i] = sr
	}
	return out, nil
}
