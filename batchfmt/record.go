package batchfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Limits from S2's documentation ("Records").
const (
	// MaxAppendRecords is the most records one append may hold.
	MaxAppendRecords = 1000
	// MaxAppendBytes is the most metered bytes one append may hold (1 MiB).
	MaxAppendBytes = 1 << 20
	// MaxFencingTokenLen is the longest fencing token, in bytes.
	MaxFencingTokenLen = 48
	// MinBatchBytes is the smallest legal max_batch_bytes: the metered size of an empty record.
	MinBatchBytes = 8
)

// Command names, as carried in the value of a command record's single, empty-named header.
const (
	CommandFence = "fence"
	CommandTrim  = "trim"
)

// Header is one name/value pair; both are arbitrary bytes.
type Header struct {
	Name  []byte
	Value []byte
}

// Record is one record to append. An envelope record has zero or more headers with non-empty
// names; a command record has exactly one header with an empty name whose value names the
// command ("fence" or "trim"), and the body is the command's payload.
//
// HasTimestamp says whether Timestamp was given by the client; the zero value of Record has no
// timestamp, and the stream's timestamping mode decides what it gets.
type Record struct {
	Timestamp    uint64 // milliseconds since the Unix epoch, when HasTimestamp
	HasTimestamp bool
	Headers      []Header
	Body         []byte
}

// FenceRecord returns a command record that sets the stream's fencing token.
func FenceRecord(token string) Record {
	return Record{Headers: []Header{{Name: nil, Value: []byte(CommandFence)}}, Body: []byte(token)}
}

// TrimRecord returns a command record that moves the trim point to seqNum.
func TrimRecord(seqNum uint64) Record {
	body := make([]byte, 8)
	binary.BigEndian.PutUint64(body, seqNum)
	return Record{Headers: []Header{{Name: nil, Value: []byte(CommandTrim)}}, Body: body}
}

// IsCommand reports whether r is shaped as a command record (any header with an empty name).
// Validate tells whether it is a well-formed one.
func (r *Record) IsCommand() bool {
	for _, h := range r.Headers {
		if len(h.Name) == 0 {
			return true
		}
	}
	return false
}

// Command returns the command name of a valid command record ("" for an envelope record).
func (r *Record) Command() string {
	if len(r.Headers) == 1 && len(r.Headers[0].Name) == 0 {
		return string(r.Headers[0].Value)
	}
	return ""
}

// TrimSeqNum returns the payload of a trim command record.
func (r *Record) TrimSeqNum() (uint64, bool) {
	if r.Command() != CommandTrim || len(r.Body) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(r.Body), true
}

// MeteredSize is S2's metered size: for an envelope record 8 + 2·headers + Σ(name+value)
// + body; for a command record 8 + 2 + len(op) + len(payload). Both reduce to the same sum for
// a well-formed command record, so one formula serves both.
func (r *Record) MeteredSize() int {
	n := 8 + 2*len(r.Headers) + len(r.Body)
	for _, h := range r.Headers {
		n += len(h.Name) + len(h.Value)
	}
	return n
}

// Validate checks one record against S2's header and command rules.
func (r *Record) Validate() error {
	if !r.IsCommand() {
		return nil
	}
	if len(r.Headers) != 1 {
		return &RecordError{Reason: ReasonCommandHeaders, Detail: fmt.Sprintf("a command record must have exactly one header, found %d (a header with an empty name makes a record a command record)", len(r.Headers))}
	}
	switch op := string(r.Headers[0].Value); op {
	case CommandFence:
		if len(r.Body) > MaxFencingTokenLen {
			return &RecordError{Reason: ReasonFencingTokenTooLong, Detail: fmt.Sprintf("fencing token length (%d) exceeds %d bytes", len(r.Body), MaxFencingTokenLen)}
		}
	case CommandTrim:
		if len(r.Body) != 8 {
			return &RecordError{Reason: ReasonTrimPayload, Detail: fmt.Sprintf("trim payload must be exactly 8 bytes, found %d", len(r.Body))}
		}
	default:
		return &RecordError{Reason: ReasonUnknownCommand, Detail: fmt.Sprintf("unknown command %q (a header with an empty name makes a record a command record, fence or trim; other headers need a name)", op)}
	}
	return nil
}

// AppendInput is one append: 1 to 1000 records of at most 1 MiB metered in all, committed
// atomically, with optional conditions checked against the stream at commit time.
type AppendInput struct {
	Records []Record
	// MatchSeqNum, if set, requires the first record to get exactly this seq_num.
	MatchSeqNum *uint64
	// FencingToken, if set, requires the stream's fencing token to equal it.
	FencingToken *string
}

// MeteredSize is the sum of the records' metered sizes.
func (in *AppendInput) MeteredSize() int {
	n := 0
	for i := range in.Records {
		n += in.Records[i].MeteredSize()
	}
	return n
}

// Validate checks an append against S2's limits and rules. It returns the first
// problem found, as a typed error (*AppendError or *RecordError wrapped in *AppendError).
func (in *AppendInput) Validate() error {
	if len(in.Records) == 0 {
		return &AppendError{Reason: ReasonEmptyAppend, Detail: "an append must hold at least 1 record"}
	}
	if len(in.Records) > MaxAppendRecords {
		return &AppendError{Reason: ReasonTooManyRecords, Detail: fmt.Sprintf("append holds %d records, more than the limit of %d", len(in.Records), MaxAppendRecords)}
	}
	if in.FencingToken != nil && len(*in.FencingToken) > MaxFencingTokenLen {
		return &AppendError{Reason: ReasonFencingTokenTooLong, Detail: fmt.Sprintf("fencing token length (%d) exceeds %d bytes", len(*in.FencingToken), MaxFencingTokenLen)}
	}
	total := 0
	for i := range in.Records {
		r := &in.Records[i]
		if err := r.Validate(); err != nil {
			return &AppendError{Reason: ReasonInvalidRecord, Index: i, Detail: err.Error(), Err: err}
		}
		total += r.MeteredSize()
	}
	if total > MaxAppendBytes {
		return &AppendError{Reason: ReasonTooManyBytes, Detail: fmt.Sprintf("append size in metered bytes (%d) exceeds the limit of %d", total, MaxAppendBytes)}
	}
	return nil
}

// ErrInvalid is matched (errors.Is) by every validation error of this package.
var ErrInvalid = errors.New("batchfmt: invalid input")

// Reason classifies a validation failure.
type Reason string

const (
	ReasonEmptyAppend         Reason = "empty_append"
	ReasonTooManyRecords      Reason = "too_many_records"
	ReasonTooManyBytes        Reason = "too_many_bytes"
	ReasonRecordTooLarge      Reason = "record_too_large"
	ReasonInvalidRecord       Reason = "invalid_record"
	ReasonCommandHeaders      Reason = "command_headers"
	ReasonUnknownCommand      Reason = "unknown_command"
	ReasonFencingTokenTooLong Reason = "fencing_token_too_long"
	ReasonTrimPayload         Reason = "trim_payload"
)

// RecordError is a record that breaks the header or command rules.
type RecordError struct {
	Reason Reason
	Detail string
}

func (e *RecordError) Error() string        { return "invalid record: " + e.Detail }
func (e *RecordError) Is(target error) bool { return target == ErrInvalid }

// AppendError is an append that breaks a limit or holds an invalid record (Index, Err).
type AppendError struct {
	Reason Reason
	Index  int // the offending record's index, for ReasonInvalidRecord
	Detail string
	Err    error
}

func (e *AppendError) Error() string {
	if e.Reason == ReasonInvalidRecord {
		return fmt.Sprintf("invalid append: record %d: %s", e.Index, e.Detail)
	}
	return "invalid append: " + e.Detail
}
func (e *AppendError) Unwrap() error        { return e.Err }
func (e *AppendError) Is(target error) bool { return target == ErrInvalid }
