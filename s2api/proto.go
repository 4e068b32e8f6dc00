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

// fieldIter walks the fields of one message.
type fieldIter struct {
	b   []byte
	msg string
}

// next returns the next field; value holds a varint's value, or bytes for BytesType.
func (it *fieldIter) next() (num protowire.Number, typ protowire.Type, v uint64, bs []byte, ok bool, err error) {
	if len(it.b) == 0 {
		return 0, 0, 0, nil, false, nil
	}
	num, typ, n := protowire.ConsumeTag(it.b)
	if n < 0 {
		return 0, 0, 0, nil, false, protoErr(it.msg, "bad tag: %v", protowire.ParseError(n))
	}
	it.b = it.b[n:]
	switch typ {
	case protowire.VarintType:
		v, n = protowire.ConsumeVarint(it.b)
	case protowire.BytesType:
		bs, n = protowire.ConsumeBytes(it.b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, it.b)
	}
	if n < 0 {
		return 0, 0, 0, nil, false, protoErr(it.msg, "field %d: %v", num, protowire.ParseError(n))
	}
	it.b = it.b[n:]
	return num, typ, v, bs, true, nil
}

func wantType(msg string, num protowire.Number, got, want protowire.Type) error {
	if got != want {
		return protoErr(msg, "field %d has wire type %d, want %d", num, got, want)
	}
	return nil
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
	it := fieldIter{b: b, msg: "StreamPosition"}
	for {
		num, typ, v, _, ok, err := it.next()
		if err != nil || !ok {
			return err
		}
		switch num {
		case 1, 2:
			if err := wantType(it.msg, num, typ, protowire.VarintType); err != nil {
				return err
			}
			if num == 1 {
				p.SeqNum = v
			} else {
				p.Timestamp = v
			}
		}
	}
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
	it := fieldIter{b: b, msg: "Header"}
	for {
		num, typ, _, bs, ok, err := it.next()
		if err != nil {
			return h, err
		}
		if !ok {
			return h, nil
		}
		switch num {
		case 1, 2:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return h, err
			}
			if num == 1 {
				h.Name = bs
			} else {
				h.Value = bs
			}
		}
	}
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
	it := fieldIter{b: b, msg: "AppendRecord"}
	start := len(*slab)
	for {
		num, typ, v, bs, ok, err := it.next()
		if err != nil {
			return r, err
		}
		if !ok {
			if n := len(*slab); n > start {
				r.Headers = (*slab)[start:n:n]
			}
			return r, nil
		}
		switch num {
		case 1:
			if err := wantType(it.msg, num, typ, protowire.VarintType); err != nil {
				return r, err
			}
			r.Timestamp, r.HasTimestamp = v, true
		case 2:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return r, err
			}
			h, err := decodeHeader(bs)
			if err != nil {
				return r, err
			}
			*slab = append(*slab, h)
		case 3:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return r, err
			}
			r.Body = bs
		}
	}
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
	it := fieldIter{b: b, msg: "AppendInput"}
	for {
		num, typ, v, bs, ok, err := it.next()
		if err != nil {
			return batchfmt.AppendInput{}, err
		}
		if !ok {
			return in, nil
		}
		switch num {
		case 1:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return batchfmt.AppendInput{}, err
			}
			if len(in.Records) >= 1<<20 {
				return batchfmt.AppendInput{}, protoErr(it.msg, "too many records")
			}
			r, err := decodeAppendRecord(bs, &headers)
			if err != nil {
				return batchfmt.AppendInput{}, err
			}
			in.Records = append(in.Records, r)
		case 2:
			if err := wantType(it.msg, num, typ, protowire.VarintType); err != nil {
				return batchfmt.AppendInput{}, err
			}
			n := v
			in.MatchSeqNum = &n
		case 3:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return batchfmt.AppendInput{}, err
			}
			s := string(bs)
			in.FencingToken = &s
		}
	}
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
	it := fieldIter{b: b, msg: "AppendAck"}
	for {
		num, typ, _, bs, ok, err := it.next()
		if err != nil {
			return AppendAck{}, err
		}
		if !ok {
			return a, nil
		}
		var p *StreamPosition
		switch num {
		case 1:
			p = &a.Start
		case 2:
			p = &a.End
		case 3:
			p = &a.Tail
		default:
			continue
		}
		if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
			return AppendAck{}, err
		}
		if err := DecodeStreamPositionProto(bs, p); err != nil {
			return AppendAck{}, err
		}
	}
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
	it := fieldIter{b: b, msg: "SequencedRecord"}
	for {
		num, typ, v, bs, ok, err := it.next()
		if err != nil {
			return r, err
		}
		if !ok {
			return r, nil
		}
		switch num {
		case 1, 2:
			if err := wantType(it.msg, num, typ, protowire.VarintType); err != nil {
				return r, err
			}
			if num == 1 {
				r.SeqNum = v
			} else {
				r.Timestamp = v
			}
		case 3:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return r, err
			}
			h, err := decodeHeader(bs)
			if err != nil {
				return r, err
			}
			r.Headers = append(r.Headers, h)
		case 4:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return r, err
			}
			r.Body = bs
		}
	}
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
	it := fieldIter{b: b, msg: "ReadBatch"}
	for {
		num, typ, _, bs, ok, err := it.next()
		if err != nil {
			return ReadBatch{}, err
		}
		if !ok {
			return rb, nil
		}
		switch num {
		case 1:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return ReadBatch{}, err
			}
			r, err := DecodeSequencedRecordProto(bs)
			if err != nil {
				return ReadBatch{}, err
			}
			rb.Records = append(rb.Records, r)
		case 2:
			if err := wantType(it.msg, num, typ, protowire.BytesType); err != nil {
				return ReadBatch{}, err
			}
			if rb.Tail == nil {
				rb.Tail = &StreamPosition{}
			}
			if err := DecodeStreamPositionProto(bs, rb.Tail); err != nil {
				return ReadBatch{}, err
			}
		}
	}
}
