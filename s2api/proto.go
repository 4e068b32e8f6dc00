package s2api

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-dev/sluice/batchfmt"
)

// The protobuf messages of package s2.v1, encoded by hand. Decoding follows proto3: unknown
// fields are skipped, a repeated scalar field keeps its last value, a repeated message field
// (StreamPosition) is merged, and a field of the wrong wire type is an error. Decoded byte
// slices alias the input.

func protoErr(msg string, format string, args ...any) error {
	return &Error{Code: CodeBadProto, Message: msg + ": " + fmt.Sprintf(format, args...)}
}

// field is one field of a message being decoded: a varint's value, or a length-delimited
// field's bytes (aliasing the input); fields of other wire types are skipped whole.
type field struct {
	msg string // the message's name, for errors
	num protowire.Number
	typ protowire.Type
	v   uint64
	bs  []byte
}

// walkFields calls fn for each field of the message b in order, and stops at the first error.
func walkFields(b []byte, msg string, fn func(f *field) error) error {
	f := field{msg: msg}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protoErr(msg, "bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		f.num, f.typ, f.v, f.bs = num, typ, 0, nil
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.bs, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protoErr(msg, "field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(&f); err != nil {
			return err
		}
	}
	return nil
}

// uint64 stores a varint field's value in *dst; any other wire type is an error.
func (f *field) uint64(dst *uint64) error {
	if err := f.want(protowire.VarintType); err != nil {
		return err
	}
	*dst = f.v
	return nil
}

// bytes stores a length-delimited field's bytes in *dst; any other wire type is an error.
func (f *field) bytes(dst *[]byte) error {
	if err := f.want(protowire.BytesType); err != nil {
		return err
	}
	*dst = f.bs
	return nil
}

// want reports an error if the field is not of wire type typ.
func (f *field) want(typ protowire.Type) error {
	if f.typ != typ {
		return protoErr(f.msg, "field %d has wire type %d, want %d", f.num, f.typ, typ)
	}
	return nil
}

// position merges a StreamPosition field into *p.
func (f *field) position(p *StreamPosition) error {
	if err := f.want(protowire.BytesType); err != nil {
		return err
	}
	return DecodeStreamPositionProto(f.bs, p)
}

// AppendStreamPositionProto appends the encoding of p (fields 1 seq_num, 2 timestamp).
func AppendStreamPositionProto(b []byte, p StreamPosition) []byte {
	if p.SeqNum != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, p.SeqNum)
	}
	if p.Timestamp != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, p.Timestamp)
	}
	return b
}

func sizeStreamPosition(p StreamPosition) int {
	n := 0
	if p.SeqNum != 0 {
		n += 1 + protowire.SizeVarint(p.SeqNum)
	}
	if p.Timestamp != 0 {
		n += 1 + protowire.SizeVarint(p.Timestamp)
	}
	return n
}

func appendPositionField(b []byte, num protowire.Number, p StreamPosition) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeStreamPosition(p)))
	return AppendStreamPositionProto(b, p)
}

// DecodeStreamPositionProto decodes into p, merging with what p holds.
func DecodeStreamPositionProto(b []byte, p *StreamPosition) error {
	return walkFields(b, "StreamPosition", func(f *field) error {
		switch f.num {
		case 1:
			return f.uint64(&p.SeqNum)
		case 2:
			return f.uint64(&p.Timestamp)
		}
		return nil
	})
}

func appendHeaderField(b []byte, num protowire.Number, h batchfmt.Header) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeHeader(h)))
	if len(h.Name) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, h.Name)
	}
	if len(h.Value) > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, h.Value)
	}
	return b
}

func decodeHeader(b []byte) (batchfmt.Header, error) {
	var h batchfmt.Header
	err := walkFields(b, "Header", func(f *field) error {
		switch f.num {
		case 1:
			return f.bytes(&h.Name)
		case 2:
			return f.bytes(&h.Value)
		}
		return nil
	})
	return h, err
}

func sizeHeader(h batchfmt.Header) int {
	size := 0
	if len(h.Name) > 0 {
		size += 1 + protowire.SizeBytes(len(h.Name))
	}
	if len(h.Value) > 0 {
		size += 1 + protowire.SizeBytes(len(h.Value))
	}
	return size
}

func sizeAppendRecord(r *batchfmt.Record) int {
	n := 0
	if r.HasTimestamp {
		n += 1 + protowire.SizeVarint(r.Timestamp)
	}
	for _, h := range r.Headers {
		n += 1 + protowire.SizeBytes(sizeHeader(h))
	}
	if len(r.Body) > 0 {
		n += 1 + protowire.SizeBytes(len(r.Body))
	}
	return n
}

// AppendAppendRecordProto appends the encoding of one AppendRecord
// (1 optional timestamp, 2 repeated headers, 3 body).
func AppendAppendRecordProto(b []byte, r *batchfmt.Record) []byte {
	if r.HasTimestamp {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, r.Timestamp)
	}
	for _, h := range r.Headers {
		b = appendHeaderField(b, 2, h)
	}
	if len(r.Body) > 0 {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Body)
	}
	return b
}

// DecodeAppendRecordProto decodes one AppendRecord.
func DecodeAppendRecordProto(b []byte) (batchfmt.Record, error) {
	var slab []batchfmt.Header
	return decodeAppendRecord(b, &slab)
}

// decodeAppendRecord decodes one AppendRecord, appending its headers to *slab (shared by
// the records of one input, so that headers cost no allocation per record).
func decodeAppendRecord(b []byte, slab *[]batchfmt.Header) (batchfmt.Record, error) {
	var r batchfmt.Record
	start := len(*slab)
	err := walkFields(b, "AppendRecord", func(f *field) error {
		switch f.num {
		case 1:
			if err := f.uint64(&r.Timestamp); err != nil {
				return err
			}
			r.HasTimestamp = true
		case 2:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			h, err := decodeHeader(f.bs)
			if err != nil {
				return err
			}
			*slab = append(*slab, h)
		case 3:
			return f.bytes(&r.Body)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	if n := len(*slab); n > start {
		r.Headers = (*slab)[start:n:n]
	}
	return r, nil
}

// AppendAppendInputProto appends the encoding of an AppendInput
// (1 repeated records, 2 optional match_seq_num, 3 optional fencing_token).
func AppendAppendInputProto(b []byte, in *batchfmt.AppendInput) []byte {
	for i := range in.Records {
		r := &in.Records[i]
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeAppendRecord(r)))
		b = AppendAppendRecordProto(b, r)
	}
	if in.MatchSeqNum != nil {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, *in.MatchSeqNum)
	}
	if in.FencingToken != nil {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, *in.FencingToken)
	}
	return b
}

// DecodeAppendInputProto decodes an AppendInput. Like the JSON decoder it does not apply
// the append limits: call Validate on the result.
func DecodeAppendInputProto(b []byte) (batchfmt.AppendInput, error) {
	var in batchfmt.AppendInput
	var headers []batchfmt.Header // the records' headers, one slab for all
	err := walkFields(b, "AppendInput", func(f *field) error {
		switch f.num {
		case 1:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			if len(in.Records) >= 1<<20 {
				return protoErr(f.msg, "too many records")
			}
			r, err := decodeAppendRecord(f.bs, &headers)
			if err != nil {
				return err
			}
			in.Records = append(in.Records, r)
		case 2:
			var n uint64
			if err := f.uint64(&n); err != nil {
				return err
			}
			in.MatchSeqNum = &n
		case 3:
			var bs []byte
			if err := f.bytes(&bs); err != nil {
				return err
			}
			s := string(bs)
			in.FencingToken = &s
		}
		return nil
	})
	if err != nil {
		return batchfmt.AppendInput{}, err
	}
	return in, nil
}

// AppendAppendAckProto appends the encoding of an AppendAck (1 start, 2 end, 3 tail). All
// three are always present, as the SDK requires.
func AppendAppendAckProto(b []byte, a *AppendAck) []byte {
	b = appendPositionField(b, 1, a.Start)
	b = appendPositionField(b, 2, a.End)
	return appendPositionField(b, 3, a.Tail)
}

// DecodeAppendAckProto decodes an AppendAck.
func DecodeAppendAckProto(b []byte) (AppendAck, error) {
	var a AppendAck
	err := walkFields(b, "AppendAck", func(f *field) error {
		switch f.num {
		case 1:
			return f.position(&a.Start)
		case 2:
			return f.position(&a.End)
		case 3:
			return f.position(&a.Tail)
		}
		return nil
	})
	if err != nil {
		return AppendAck{}, err
	}
	return a, nil
}

func sizeSequencedRecord(r *SequencedRecord) int {
	n := 0
	if r.SeqNum != 0 {
		n += 1 + protowire.SizeVarint(r.SeqNum)
	}
	if r.Timestamp != 0 {
		n += 1 + protowire.SizeVarint(r.Timestamp)
	}
	for _, h := range r.Headers {
		n += 1 + protowire.SizeBytes(sizeHeader(h))
	}
	if len(r.Body) > 0 {
		n += 1 + protowire.SizeBytes(len(r.Body))
	}
	return n
}

// AppendSequencedRecordProto appends the encoding of a SequencedRecord
// (1 seq_num, 2 timestamp, 3 repeated headers, 4 body).
func AppendSequencedRecordProto(b []byte, r *SequencedRecord) []byte {
	if r.SeqNum != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, r.SeqNum)
	}
	if r.Timestamp != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, r.Timestamp)
	}
	for _, h := range r.Headers {
		b = appendHeaderField(b, 3, h)
	}
	if len(r.Body) > 0 {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Body)
	}
	return b
}

// DecodeSequencedRecordProto decodes a SequencedRecord.
func DecodeSequencedRecordProto(b []byte) (SequencedRecord, error) {
	var r SequencedRecord
	err := walkFields(b, "SequencedRecord", func(f *field) error {
		switch f.num {
		case 1:
			return f.uint64(&r.SeqNum)
		case 2:
			return f.uint64(&r.Timestamp)
		case 3:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			h, err := decodeHeader(f.bs)
			if err != nil {
				return err
			}
			r.Headers = append(r.Headers, h)
		case 4:
			return f.bytes(&r.Body)
		}
		return nil
	})
	return r, err
}

// AppendReadBatchProto appends the encoding of a ReadBatch (1 repeated records, 2 optional tail).
func AppendReadBatchProto(b []byte, rb *ReadBatch) []byte {
	for i := range rb.Records {
		r := &rb.Records[i]
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeSequencedRecord(r)))
		b = AppendSequencedRecordProto(b, r)
	}
	if rb.Tail != nil {
		b = appendPositionField(b, 2, *rb.Tail)
	}
	return b
}

// DecodeReadBatchProto decodes a ReadBatch.
func DecodeReadBatchProto(b []byte) (ReadBatch, error) {
	var rb ReadBatch
	err := walkFields(b, "ReadBatch", func(f *field) error {
		switch f.num {
		case 1:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			r, err := DecodeSequencedRecordProto(f.bs)
			if err != nil {
				return err
			}
			rb.Records = append(rb.Records, r)
		case 2:
			if rb.Tail == nil {
				rb.Tail = &StreamPosition{}
			}
			return f.position(rb.Tail)
		}
		return nil
	})
	if err != nil {
		return ReadBatch{}, err
	}
	return rb, nil
}
