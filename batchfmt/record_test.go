package batchfmt

import (
	"errors"
	"strings"
	"testing"
)

func TestMeteredSize(t *testing.T) {
	cases := []struct {
		r    Record
		want int
	}{
		{Record{}, 8},
		{Record{Body: []byte("hello")}, 13},
		// 8 + 2·2 + (10+12) + (8+6) + 15
		{Record{Headers: []Header{{Name: []byte("event-type"), Value: []byte("user.created")}, {Name: []byte("trace-id"), Value: []byte("abc123")}}, Body: []byte(`{"user_id":123}`)}, 63},
		// command: 8 + 2 + len("fence") + len(token)
		{FenceRecord("my-unique-token"), 8 + 2 + 5 + 15},
		{TrimRecord(100), 8 + 2 + 4 + 8},
		{Record{Timestamp: 99, HasTimestamp: true}, 8}, // the timestamp is not metered
	}
	for i, tc := range cases {
		if got := tc.r.MeteredSize(); got != tc.want {
			t.Errorf("case %d: MeteredSize = %d, want %d", i, got, tc.want)
		}
	}
	in := AppendInput{Records: []Record{cases[1].r, cases[2].r}}
	if in.MeteredSize() != 76 {
		t.Fatalf("append MeteredSize = %d", in.MeteredSize())
	}
}

func TestCommandRecords(t *testing.T) {
	f := FenceRecord("tok")
	if !f.IsCommand() || f.Command() != CommandFence || string(f.Body) != "tok" || f.Validate() != nil {
		t.Fatalf("fence record %+v", f)
	}
	tr := TrimRecord(0x0102030405060708)
	if n, ok := tr.TrimSeqNum(); !ok || n != 0x0102030405060708 || tr.Command() != CommandTrim || tr.Validate() != nil {
		t.Fatalf("trim record %+v", tr)
	}
	if string(tr.Body) != "\x01\x02\x03\x04\x05\x06\x07\x08" {
		t.Fatalf("trim payload is not big-endian: %x", tr.Body)
	}
	env := Record{Headers: []Header{{Name: []byte("a"), Value: []byte("fence")}}}
	if env.IsCommand() || env.Command() != "" {
		t.Fatal("envelope taken for a command")
	}
	if _, ok := f.TrimSeqNum(); ok {
		t.Fatal("TrimSeqNum of a fence")
	}
	f0, f48 := FenceRecord(""), FenceRecord(strings.Repeat("x", 48))
	if f0.Validate() != nil || f48.Validate() != nil {
		t.Fatal("fence token of 0 or 48 bytes rejected")
	}
}

func TestRecordValidation(t *testing.T) {
	cases := []struct {
		name   string
		r      Record
		reason Reason
		text   string
	}{
		{"two headers, one empty name", Record{Headers: []Header{{Value: []byte("fence")}, {Name: []byte("x")}}}, ReasonCommandHeaders,
			"invalid record: a command record must have exactly one header, found 2 (a header with an empty name makes a record a command record)"},
		{"envelope with an empty name", Record{Headers: []Header{{Name: []byte("a")}, {Name: nil, Value: []byte("v")}}}, ReasonCommandHeaders,
			"invalid record: a command record must have exactly one header, found 2 (a header with an empty name makes a record a command record)"},
		{"unknown command", Record{Headers: []Header{{Value: []byte("drop")}}}, ReasonUnknownCommand,
			`invalid record: unknown command "drop" (a header with an empty name makes a record a command record, fence or trim; other headers need a name)`},
		{"fence token too long", FenceRecord(strings.Repeat("x", 49)), ReasonFencingTokenTooLong,
			"invalid record: fencing token length (49) exceeds 48 bytes"},
		{"trim payload short", Record{Headers: []Header{{Value: []byte("trim")}}, Body: make([]byte, 7)}, ReasonTrimPayload,
			"invalid record: trim payload must be exactly 8 bytes, found 7"},
		{"trim payload long", Record{Headers: []Header{{Value: []byte("trim")}}, Body: make([]byte, 9)}, ReasonTrimPayload,
			"invalid record: trim payload must be exactly 8 bytes, found 9"},
	}
	for _, tc := range cases {
		err := tc.r.Validate()
		var re *RecordError
		if !errors.As(err, &re) || re.Reason != tc.reason || err.Error() != tc.text || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want %q (%s)", tc.name, err, tc.text, tc.reason)
		}
	}
	ok := Record{Headers: []Header{{Name: []byte("a"), Value: nil}}, Body: nil}
	if err := ok.Validate(); err != nil {
		t.Fatalf("envelope with an empty value: %v", err)
	}
}

func TestAppendValidation(t *testing.T) {
	tok49 := strings.Repeat("t", 49)
	tok48 := strings.Repeat("t", 48)
	cases := []struct {
		name   string
		in     AppendInput
		reason Reason
		text   string
	}{
		{"empty", AppendInput{}, ReasonEmptyAppend, "invalid append: an append must hold at least 1 record"},
		{"1001 records", AppendInput{Records: make([]Record, 1001)}, ReasonTooManyRecords, "invalid append: append holds 1001 records, more than the limit of 1000"},
		{"token", AppendInput{Records: []Record{{}}, FencingToken: &tok49}, ReasonFencingTokenTooLong, "invalid append: fencing token length (49) exceeds 48 bytes"},
		{"bytes", AppendInput{Records: []Record{{Body: make([]byte, 1<<20-8)}, {}}}, ReasonTooManyBytes, "invalid append: append size in metered bytes (1048584) exceeds the limit of 1048576"},
		{"record", AppendInput{Records: []Record{{}, {}, FenceRecord(tok49)}}, ReasonInvalidRecord, "invalid append: record 2: invalid record: fencing token length (49) exceeds 48 bytes"},
	}
	for _, tc := range cases {
		err := tc.in.Validate()
		var ae *AppendError
		if !errors.As(err, &ae) || ae.Reason != tc.reason || err.Error() != tc.text || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want %q (%s)", tc.name, err, tc.text, tc.reason)
		}
	}
	var re *RecordError
	if err := cases[4].in.Validate(); !errors.As(err, &re) || re.Reason != ReasonFencingTokenTooLong {
		t.Fatalf("the record error is not unwrapped: %v", err)
	}
	// The bounds themselves are legal.
	for _, in := range []AppendInput{
		{Records: make([]Record, 1000), FencingToken: &tok48},
		{Records: []Record{{Body: make([]byte, 1<<20-8)}}},
	} {
		if err := in.Validate(); err != nil {
			t.Errorf("append at the limits rejected: %v", err)
		}
	}
}
