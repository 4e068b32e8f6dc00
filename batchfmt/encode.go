package batchfmt

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
)

// crcTable is the CRC-32C (Castagnoli) table; hash/crc32 uses the CPU's CRC32 instruction
// where there is one.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Encoder builds one batch object from appends, in order. It is reusable via Reset and is
// not safe for concurrent use.
//
// Add copies each append into the encoder's buffer at once, so the caller may reuse the
// AppendInput and its byte slices as soon as Add returns.
type Encoder struct {
	c       Compression
	buf     []byte // HeaderSize reserved bytes, then the uncompressed payload
	out     []byte // the compressed object, when c is zstd
	appends int
	records int
	metered int
	err     error
}

// NewEncoder returns an empty encoder that writes objects with compression c. An unknown c
// makes Finish fail.
func NewEncoder(c Compression) *Encoder {
	e := &Encoder{c: c}
	e.Reset()
	return e
}

// Reset empties the encoder, keeping its buffers. Bytes returned by Finish become invalid.
func (e *Encoder) Reset() {
	if cap(e.buf) < HeaderSize {
		e.buf = make([]byte, HeaderSize, 64<<10)
	}
	e.buf = e.buf[:HeaderSize]
	e.out = e.out[:0]
	e.appends, e.records, e.metered = 0, 0, 0
	e.err = nil
	if !e.c.Valid() {
		e.err = fmt.Errorf("batchfmt: encoder: %w %d", ErrUnknownCompression, uint8(e.c))
	}
}

// Compression returns the encoder's compression.
func (e *Encoder) Compression() Compression { return e.c }

// Len returns the number of appends added so far.
func (e *Encoder) Len() int { return e.appends }

// Records returns the number of records added so far.
func (e *Encoder) Records() int { return e.records }

// MeteredBytes returns the metered size of the records added so far.
func (e *Encoder) MeteredBytes() int { return e.metered }

// EncodedSize returns the uncompressed size of the object so far, header and trailer
// included: the figure to compare with a flush threshold.
func (e *Encoder) EncodedSize() int { return len(e.buf) + TrailerSize }

// Err returns the first error met by Add (an invalid append), or nil.
func (e *Encoder) Err() error { return e.err }

// Add appends one append and returns its index in the object.
//
// The append is validated as AppendInput.Validate does. An invalid append is not added:
// Add returns -1, and the error is kept for Err and Finish (the encoder refuses to produce an
// object a reader would have to reject). Callers are expected to validate appends before
// accepting them, so this is a safety net, not the place to report errors to users.
//
// The append must not change while Add runs (that would be a data race). Add reads each
// record's fields more than once; a change between the reads that alters a frame's length
// is reported as ErrInvalid, others may give an object that readers refuse as corrupt.
func (e *Encoder) Add(in *AppendInput) (appendIndex int) {
	if e.err != nil {
		return -1
	}
	start := len(e.buf)
	if err := e.add(in); err != nil {
		e.buf = e.buf[:start]
		e.err = fmt.Errorf("batchfmt: encoder: append %d: %w", e.appends, err)
		return -1
	}
	e.appends++
	return e.appends - 1
}

// add sizes and validates every record, then writes the append header, final by now, and
// the record frames. Nothing is kept of an append that is refused (Add truncates).
func (e *Encoder) add(in *AppendInput) error {
	recs := in.Records // read once: the count in the header, the sizes and the frames agree
	n := len(recs)
	if n == 0 || n > MaxAppendRecords {
		return in.Validate() // reports the count rule
	}
	var flags byte
	if in.MatchSeqNum != nil {
		flags |= appHasMatchSeqNum
	}
	if in.FencingToken != nil {
		if len(*in.FencingToken) > MaxFencingTokenLen {
			return in.Validate()
		}
		flags |= appHasFencingToken
	}
	metered, wire := 0, 0
	for i := range recs {
		r := &recs[i]
		m, w, cmd := recordSize(r)
		if cmd {
			if err := r.Validate(); err != nil {
				return &AppendError{Reason: ReasonInvalidRecord, Index: i, Detail: err.Error(), Err: err}
			}
		}
		metered += m
		wire += w
		if metered > MaxAppendBytes {
			return in.Validate() // reports the byte rule with the full total
		}
	}
	if len(e.buf)-HeaderSize+maxAppendHeader+wire > MaxObjectBytes {
		return fmt.Errorf("%w: object payload would exceed %d bytes", ErrInvalid, MaxObjectBytes)
	}
	b := grow(e.buf, maxAppendHeader+wire)
	b = appendAppendHeader(b, in, flags, n, metered, wire)
	recStart := len(b)
	written := 0
	for i := range recs {
		var m int
		b, m = appendFrame(b, &recs[i])
		written += m
	}
	if len(b)-recStart != wire || written != metered {
		return errChanged(len(b)-recStart, wire)
	}
	e.buf = b
	e.metered += metered
	e.records += n
	return nil
}

// maxAppendHeader is the longest append header: the fixed part, match_seq_num and a fencing
// token of the longest length.
const maxAppendHeader = appendHeaderSize + 8 + 1 + MaxFencingTokenLen

// appendAppendHeader appends an append's header: flags, record count, metered and frame
// totals, then the condition fields the flags announce.
func appendAppendHeader(b []byte, in *AppendInput, flags byte, n, metered, wire int) []byte {
	b = append(b, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = binary.BigEndian.AppendUint32(b, uint32(metered))
	b = binary.BigEndian.AppendUint32(b, uint32(wire))
	if in.MatchSeqNum != nil {
		b = binary.BigEndian.AppendUint64(b, *in.MatchSeqNum)
	}
	if in.FencingToken != nil {
		b = append(b, byte(len(*in.FencingToken)))
		b = append(b, *in.FencingToken...)
	}
	return b
}

// errChanged is the error for an append whose records changed while Add was encoding them
// (another goroutine wrote to them): the bytes written disagree with the sizes measured.
func errChanged(written, sized int) error {
	return fmt.Errorf("%w: records changed while being encoded (%d bytes written, %d sized)", ErrInvalid, written, sized)
}

// recordSize returns r's metered size, the size of its frame, and whether r is shaped as a
// command record (it then still needs Validate). A metered size beyond the 3-byte field
// (impossible in a valid append, which the caller checks) is sized as if it fitted.
func recordSize(r *Record) (metered, wire int, cmd bool) {
	metered = 8 + 2*len(r.Headers) + len(r.Body)
	wire = lenSize(len(r.Headers)) + len(r.Body)
	for i := range r.Headers {
		h := &r.Headers[i]
		metered += len(h.Name) + len(h.Value)
		wire += lenSize(len(h.Name)) + len(h.Name) + lenSize(len(h.Value)) + len(h.Value)
		cmd = cmd || len(h.Name) == 0
	}
	wire += 1 + varlenSize(metered)
	if r.HasTimestamp {
		wire += 8
	}
	return metered, wire, cmd
}

// appendFrame appends r's frame and returns r's metered size. The size must fit in 3 bytes,
// as the caller's check of the append's size guarantees (a larger one is written clamped).
func appendFrame(b []byte, r *Record) ([]byte, int) {
	m := 8 + 2*len(r.Headers) + len(r.Body)
	cmd := false
	for i := range r.Headers {
		h := &r.Headers[i]
		m += len(h.Name) + len(h.Value)
		cmd = cmd || len(h.Name) == 0
	}
	v := min(m, 1<<24-1)
	magic, varlen := frameLead(v, cmd, r.HasTimestamp)
	switch varlen {
	case 1:
		b = append(b, magic, byte(v))
	case 2:
		b = append(b, magic, byte(v>>8), byte(v))
	default:
		b = append(b, magic, byte(v>>16), byte(v>>8), byte(v))
	}
	if r.HasTimestamp {
		b = binary.BigEndian.AppendUint64(b, r.Timestamp)
	}
	b = appendLen(b, len(r.Headers))
	for i := range r.Headers {
		h := &r.Headers[i]
		b = appendLen(b, len(h.Name))
		b = append(b, h.Name...)
		b = appendLen(b, len(h.Value))
		b = append(b, h.Value...)
	}
	return append(b, r.Body...), m
}

// frameLead returns a record frame's magic byte and the length of its metered-size field,
// for the metered size m (at most 3 bytes' worth: larger values are sized as 3 bytes).
func frameLead(m int, cmd, ts bool) (magic byte, varlen int) {
	magic = recTypeEnvelope
	if cmd {
		magic = recTypeCommand
	}
	varlen = varlenSize(m)
	magic |= byte(varlen-1) << recVarlenShift
	if ts {
		magic |= recHasTimestamp
	}
	return magic, varlen
}

// varlenSize is the size of the metered-size field for m: 1, 2 or 3 bytes.
func varlenSize(m int) int {
	switch {
	case m < 1<<8:
		return 1
	case m < 1<<16:
		return 2
	}
	return 3
}

// lenSize is the size of a length field for n: 2 bytes, or 6 with the escape.
func lenSize(n int) int {
	if n < lenEscape {
		return 2
	}
	return 6
}

// appendLen appends n as 2 bytes, or as the escape 0xFFFF and 4 bytes when n >= 0xFFFF.
func appendLen(b []byte, n int) []byte {
	if n < lenEscape {
		return append(b, byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xFF, 0xFF), uint32(n))
}

// Finish returns the object's bytes, compressed if configured. They stay valid until Reset
// (or the next Add). An object may hold zero appends.
func (e *Encoder) Finish() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	payload := e.buf[HeaderSize:]
	var obj []byte
	switch e.c {
	case CompressionNone:
		obj = e.buf
	case CompressionZstd:
		need := HeaderSize + zstdEncoder().MaxEncodedSize(len(payload)) + TrailerSize
		if cap(e.out) < need {
			e.out = make([]byte, 0, need)
		}
		obj = zstdEncoder().EncodeAll(payload, e.out[:HeaderSize])
	}
	if len(obj)-HeaderSize > MaxObjectBytes {
		return nil, fmt.Errorf("%w: stored payload of %d bytes exceeds %d", ErrInvalid, len(obj)-HeaderSize, MaxObjectBytes)
	}
	h := obj[:HeaderSize]
	copy(h, Magic)
	h[4] = Version
	h[5] = byte(e.c)
	h[6], h[7] = 0, 0
	binary.BigEndian.PutUint32(h[8:], uint32(e.appends))
	binary.BigEndian.PutUint32(h[12:], uint32(e.records))
	binary.BigEndian.PutUint32(h[16:], uint32(len(payload)))
	binary.BigEndian.PutUint32(h[20:], uint32(len(obj)-HeaderSize))
	obj = binary.BigEndian.AppendUint32(obj, crc32.Checksum(obj, crcTable))
	if e.c == CompressionNone {
		e.buf = obj[:len(obj)-TrailerSize] // keep the buffer if append grew it
	} else {
		e.out = obj
	}
	return obj, nil
}

// grow returns b with room for n more bytes. It doubles the capacity up to 1 MiB, then
// adds a quarter: fewer copies on the way from 64 KiB to a flush size of a few MiB than
// append's growth, which nears a quarter long before 1 MiB.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	c := 2 * cap(b)
	if cap(b) >= 1<<20 {
		c = cap(b) + cap(b)/4
	}
	return slices.Grow(b, max(c, len(b)+n)-len(b))
}
