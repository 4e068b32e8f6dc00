package batchfmt

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
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

// Grow makes room for n more bytes of payload, so that appends filling them are written
// without the buffer growing (each growth copies everything encoded so far). A producer that
// knows about how large its object will get calls it once, before the first Add.
func (e *Encoder) Grow(n int) {
	if cap(e.buf)-len(e.buf) < n {
		e.buf = realloc(e.buf, len(e.buf)+n)
	}
}

// Cap returns how many bytes the encoder's buffers hold: what keeping it for reuse costs.
func (e *Encoder) Cap() int { return cap(e.buf) + cap(e.out) }

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
// the record frames into the room reserved for them. Nothing is kept of an append that is
// refused (Add truncates).
func (e *Encoder) add(in *AppendInput) error {
	recs := in.Records // read once: the count in the header, the sizes and the frames agree
	h := appendHead{n: len(recs)}
	if h.n == 0 || h.n > MaxAppendRecords {
		return in.Validate() // reports the count rule
	}
	if seq := in.MatchSeqNum; seq != nil {
		h.flags |= appHasMatchSeqNum
		h.seq = *seq
	}
	if tok := in.FencingToken; tok != nil {
		if len(*tok) > MaxFencingTokenLen {
			return in.Validate()
		}
		h.flags |= appHasFencingToken
		h.token = *tok
	}
	for i := range recs {
		r := &recs[i]
		m, w, cmd := recordSize(r)
		if cmd {
			if err := r.Validate(); err != nil {
				return &AppendError{Reason: ReasonInvalidRecord, Index: i, Detail: err.Error(), Err: err}
			}
		}
		h.metered += m
		h.wire += w
		if h.metered > MaxAppendBytes {
			return in.Validate() // reports the byte rule with the full total
		}
	}
	size := h.size() + h.wire
	if len(e.buf)-HeaderSize+size > MaxObjectBytes {
		return fmt.Errorf("%w: object payload would exceed %d bytes", ErrInvalid, MaxObjectBytes)
	}
	e.buf = grow(e.buf, size+TrailerSize) // and Finish's trailer, which then copies nothing
	b := e.buf[:len(e.buf)+size]          // the append's room, exactly
	o := h.put(b, len(e.buf))
	recStart, written := o, 0
	for i := range recs {
		var m int
		var ok bool
		if o, m, ok = putFrame(b, o, &recs[i]); !ok {
			return errChanged(o-recStart, h.wire)
		}
		written += m
	}
	if o != len(b) || written != h.metered {
		return errChanged(o-recStart, h.wire)
	}
	e.buf = b
	e.metered += h.metered
	e.records += h.n
	return nil
}

// appendHead is an append's header: flags, record count, metered and frame totals, then the
// condition fields the flags announce.
type appendHead struct {
	flags   byte
	n       int
	metered int
	wire    int // bytes of the record frames
	seq     uint64
	token   string
}

// size is the header's size in bytes.
func (h *appendHead) size() int {
	n := appendHeaderSize
	if h.flags&appHasMatchSeqNum != 0 {
		n += 8
	}
	if h.flags&appHasFencingToken != 0 {
		n += 1 + len(h.token)
	}
	return n
}

// put writes the header at b[o:] and returns the offset after it.
func (h *appendHead) put(b []byte, o int) int {
	b[o] = h.flags
	binary.BigEndian.PutUint16(b[o+1:], uint16(h.n))
	binary.BigEndian.PutUint32(b[o+3:], uint32(h.metered))
	binary.BigEndian.PutUint32(b[o+7:], uint32(h.wire))
	o += appendHeaderSize
	if h.flags&appHasMatchSeqNum != 0 {
		binary.BigEndian.PutUint64(b[o:], h.seq)
		o += 8
	}
	if h.flags&appHasFencingToken != 0 {
		b[o] = byte(len(h.token))
		o += 1 + copy(b[o+1:], h.token)
	}
	return o
}

// errChanged is the error for an append whose records changed while Add was encoding them
// (another goroutine wrote to them): the bytes written disagree with the sizes measured.
func errChanged(written, sized int) error {
	return fmt.Errorf("%w: records changed while being encoded (%d bytes written, %d sized)", ErrInvalid, written, sized)
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
	return realloc(b, max(c, len(b)+n))
}

// realloc returns a copy of b with capacity c (at least len(b)). It copies b's bytes only,
// where slices.Grow copies all of b's capacity: a reused encoder's is mostly stale bytes.
func realloc(b []byte, c int) []byte {
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}
