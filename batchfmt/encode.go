package batchfmt

import (
	"encoding/binary"
	"fmt"
	"github.com/sluice-dev/sluice/internal/crc32c"
	"slices"
)

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
	e.records += len(in.Records)
	return e.appends - 1
}

func (e *Encoder) add(in *AppendInput) error {
	n := len(in.Records)
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
	b := e.buf
	hdr := len(b)
	b = append(b, flags, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint16(b[hdr+1:], uint16(n))
	if in.MatchSeqNum != nil {
		b = binary.BigEndian.AppendUint64(b, *in.MatchSeqNum)
	}
	if in.FencingToken != nil {
		b = append(b, byte(len(*in.FencingToken)))
		b = append(b, *in.FencingToken...)
	}
	recStart := len(b)
	metered := 0
	for i := range in.Records {
		r := &in.Records[i]
		var m int
		var cmd bool
		b, m, cmd = appendRecord(b, r)
		if cmd {
			if err := r.Validate(); err != nil {
				return &AppendError{Reason: ReasonInvalidRecord, Index: i, Detail: err.Error(), Err: err}
			}
		}
		metered += m
		if metered > MaxAppendBytes {
			e.buf = b
			return in.Validate() // reports the byte rule with the full total
		}
	}
	if len(b)-HeaderSize > MaxObjectBytes {
		e.buf = b
		return fmt.Errorf("%w: object payload would exceed %d bytes", ErrInvalid, MaxObjectBytes)
	}
	binary.BigEndian.PutUint32(b[hdr+3:], uint32(metered))
	binary.BigEndian.PutUint32(b[hdr+7:], uint32(len(b)-recStart))
	e.buf = b
	e.metered += metered
	return nil
}

// appendRecord writes r's frame to b and returns its metered size, and whether r is shaped
// as a command record (it then still needs Validate). r's metered size must fit in 3 bytes,
// which the 1 MiB append limit checked by the caller guarantees for a valid append; a larger
// record is caught by the caller before the object is finished.
func appendRecord(b []byte, r *Record) ([]byte, int, bool) {
	cmd := false
	metered := 8 + 2*len(r.Headers) + len(r.Body)
	wire := lenSize(len(r.Headers)) + len(r.Body)
	for i := range r.Headers {
		h := &r.Headers[i]
		metered += len(h.Name) + len(h.Value)
		wire += lenSize(len(h.Name)) + len(h.Name) + lenSize(len(h.Value)) + len(h.Value)
		if len(h.Name) == 0 {
			cmd = true
		}
	}
	magic := byte(recTypeEnvelope)
	if cmd {
		magic = recTypeCommand
	}
	m := min(metered, 1<<24-1) // larger is unreachable for a valid append; the caller rejects it
	var varlen int
	switch {
	case m < 1<<8:
		varlen = 1
	case m < 1<<16:
		varlen = 2
	default:
		varlen = 3
	}
	magic |= byte(varlen-1) << recVarlenShift
	wire += 1 + varlen
	if r.HasTimestamp {
		magic |= recHasTimestamp
		wire += 8
	}
	n := len(b)
	b = slices.Grow(b, wire)[:n+wire]
	w := b[n:]
	w[0] = magic
	switch varlen {
	case 1:
		w[1] = byte(m)
	case 2:
		w[1], w[2] = byte(m>>8), byte(m)
	default:
		w[1], w[2], w[3] = byte(m>>16), byte(m>>8), byte(m)
	}
	o := 1 + varlen
	if r.HasTimestamp {
		binary.BigEndian.PutUint64(w[o:], r.Timestamp)
		o += 8
	}
	o = putLen(w, o, len(r.Headers))
	for i := range r.Headers {
		h := &r.Headers[i]
		o = putLen(w, o, len(h.Name))
		o += copy(w[o:], h.Name)
		o = putLen(w, o, len(h.Value))
		o += copy(w[o:], h.Value)
	}
	copy(w[o:], r.Body)
	return b, metered, cmd
}

// lenSize is the size of a length field for n: 2 bytes, or 6 with the escape.
func lenSize(n int) int {
	if n < lenEscape {
		return 2
	}
	return 6
}

// putLen writes n at w[o:] as 2 bytes, or as the escape 0xFFFF and 4 bytes when n >= 0xFFFF.
func putLen(w []byte, o, n int) int {
	if n < lenEscape {
		w[o], w[o+1] = byte(n>>8), byte(n)
		return o + 2
	}
	w[o], w[o+1] = 0xFF, 0xFF
	binary.BigEndian.PutUint32(w[o+2:], uint32(n))
	return o + 6
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
		e.out = obj
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
	obj = binary.BigEndian.AppendUint32(obj, crc32c.Checksum(obj))
	if e.c == CompressionNone {
		e.buf = obj[:len(obj)-TrailerSize] // keep the buffer if append grew it
	} else {
		e.out = obj
	}
	return obj, nil
}
