package batchfmt

import (
	"encoding/binary"
	"fmt"
	"github.com/sluice-dev/sluice/internal/crc32c"
	"math/bits"
	"slices"
	"unsafe"
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

	// Uncompressed objects are checksummed while they are built: each append's records are
	// written by the record kernel, or gathered by Folder.Gather, and every 256-byte block
	// of the payload is folded into the CRC32C soon after it is written; Finish folds the
	// rest and puts the header's CRC32C in front. folded is the object offset up to which
	// the payload has been folded.
	fold   crc32c.Folder
	folded int
	// fix is the checksum correction for bytes changed after they were folded (see
	// patch): the raw CRC of the changes, up to offset fixEnd (0: none).
	fix      uint32
	fixEnd   int
	patchBuf [8]byte
	// fusedAppends counts the appends addFused wrote, for tests.
	fusedAppends int

	// Scratch for one append: heads holds each record's frame up to its body, one after
	// another; pieces lists head, body, head, body, ... in object order, for one gather.
	heads  []byte
	pieces [][]byte
	// With a record kernel (amd64 with AVX-512, or AVX2 and VPCLMULQDQ), pieces are not needed: metas describes
	// each record's frame, and the kernel reads the rest from the Records.
	metas []recMeta
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
		e.buf = alignedBuf(HeaderSize, 64<<10)
	}
	e.buf = e.buf[:HeaderSize]
	e.out = e.out[:0]
	e.appends, e.records, e.metered = 0, 0, 0
	e.fold.Reset()
	e.folded = HeaderSize
	e.fix, e.fixEnd = 0, 0
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
	kernel := recordKernel && e.c == CompressionNone
	if kernel && n >= fusedMinRecords && len(e.buf) <= MaxObjectBytes-fusedObjectMargin {
		if ok, err := e.addFused(in, recs, flags); ok || err != nil {
			return err
		}
		// It stopped short: a command record, too many bytes, or too little room.
	}
	// One pass over the records validates and sizes each, and prepares its frame: for the
	// record kernel a recMeta, otherwise its frame up to the body (its head) in the scratch.
	// Then the append header, final by now, and the records are written to the object in
	// one call that also checksums them. Nothing is written for an append that is refused.
	heads, pieces, metas := e.heads[:0], e.pieces[:0], e.metas[:0]
	defer func() {
		clear(pieces) // keep no reference to the caller's bodies
		e.heads, e.pieces, e.metas = heads[:0], pieces[:0], metas[:0]
	}()
	metered, wire, gathered := 0, 0, 0
	if kernel {
		// The common case, records without an empty header name, is sized in assembly;
		// anything else is sized below, record by record, and validated there.
		metas = slices.Grow(metas, n)[:n]
		var sized int
		if metered, wire, sized = sizeRecords(recs, metas); sized == n {
			if metered > MaxAppendBytes {
				return in.Validate()
			}
			goto write
		}
		metas, metered, wire = metas[:0], 0, 0
	}
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
		if kernel {
			metas = append(metas, newRecMeta(m, w, cmd, r.HasTimestamp))
			continue
		}
		body := r.Body
		hs := len(heads)
		heads = appendHead(heads, r, m, w-len(body), cmd)
		pieces = append(pieces, heads[hs:len(heads):len(heads)], body)
		gathered += len(heads) - hs + len(body)
	}
	if !kernel && gathered != wire {
		return errChanged(gathered, wire)
	}
write:
	b := e.buf
	if len(b)-HeaderSize+maxAppendHeader+wire > MaxObjectBytes {
		return fmt.Errorf("%w: object payload would exceed %d bytes", ErrInvalid, MaxObjectBytes)
	}
	b = appendAppendHeader(b, in, flags, n, metered, wire)
	recStart := len(b)
	if need := wire + kernelSlack; cap(b)-recStart < need {
		if kernel {
			// Room for another append like this one as well, or for as much again as the
			// object holds (up to 64 MiB more): the record kernel, sizing as it writes
			// (addFused), needs the room before it starts.
			need = max(2*need, min(recStart, 64<<20))
		}
		b = growAligned(b, need)
	}
	b = b[:recStart+wire]
	switch {
	case kernel:
		f := e.folded
		written, folded, _, _ := encodeRecords(e.fold.State(), &b[f], recStart-f, recStart+wire-f, recs, metas)
		if written != recStart+wire-f {
			return errFrameChanged
		}
		e.fold.Advance(folded)
		e.folded += folded
	case e.c == CompressionNone:
		e.folded += e.fold.Gather(b[e.folded:], recStart-e.folded, pieces)
	default:
		o := recStart
		for _, p := range pieces {
			o += copy(b[o:], p)
		}
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
	hdr := len(b)
	b = growAligned(b, maxAppendHeader)
	b = append(b, flags, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint16(b[hdr+1:], uint16(n))
	binary.BigEndian.PutUint32(b[hdr+3:], uint32(metered))
	binary.BigEndian.PutUint32(b[hdr+7:], uint32(wire))
	if in.MatchSeqNum != nil {
		b = binary.BigEndian.AppendUint64(b, *in.MatchSeqNum)
	}
	if in.FencingToken != nil {
		b = append(b, byte(len(*in.FencingToken)))
		b = append(b, *in.FencingToken...)
	}
	return b
}

// Appends of at least fusedMinRecords records are first tried with the record kernel
// sizing as it writes (addFused), which reads each record once instead of twice; its
// totals go into the append header afterwards, and when the kernel has already folded the
// header's placeholder the checksum is patched, at about 30 ns, which smaller appends would
// not win back. Objects within fusedObjectMargin of MaxObjectBytes take the two-pass path,
// which checks the limit before writing.
const (
	fusedMinRecords    = 32
	fusedObjectMargin  = 16 << 20
	appendTotalsOffset = 3 // the metered and frame totals in an append header: 8 bytes
)

// addFused writes an append of envelope records with the record kernel sizing each record
// as it writes it. ok is false, with nothing written and the checksum state as it was, if
// the kernel stopped short: at a command record, at a metered total over MaxAppendBytes
// (the two-pass path reports the error) or for want of room (it grows the buffer).
func (e *Encoder) addFused(in *AppendInput, recs []Record, flags byte) (ok bool, err error) {
	hdr := len(e.buf)
	b := appendAppendHeader(e.buf, in, flags, len(recs), 0, 0)
	recStart := len(b)
	f := e.folded
	limit := cap(b) - kernelSlack
	if limit <= recStart {
		return false, nil
	}
	b = b[:cap(b)]
	written, folded, metered, done := encodeRecords(e.fold.State(), &b[f], recStart-f, limit-f, recs, nil)
	if written < 0 {
		return false, errFrameChanged
	}
	if done < len(recs) {
		return false, nil
	}
	end := f + written
	b = b[:end]
	t := b[hdr+appendTotalsOffset : hdr+appendTotalsOffset+8]
	binary.BigEndian.PutUint32(t, uint32(metered))
	binary.BigEndian.PutUint32(t[4:], uint32(end-recStart))
	if foldEnd := f + folded; foldEnd > hdr+appendTotalsOffset {
		// The kernel folded the totals as zeros: patch the checksum by what they are now,
		// for the bytes it folded (the rest will be folded as they are).
		d := e.patchBuf[:]
		clear(d)
		copy(d[:min(8, foldEnd-hdr-appendTotalsOffset)], t)
		e.patch(hdr+appendTotalsOffset, d)
	}
	e.fold.Advance(folded)
	e.folded += folded
	e.buf = b
	e.metered += metered
	e.records += len(recs)
	e.fusedAppends++
	return true, nil
}

// patch records that the object's bytes at [p, p+len(d)) were folded as they were then and
// changed since by XOR with d; Finish corrects the checksum (crc32c.Raw and Shift). Patches
// come in increasing order of p.
func (e *Encoder) patch(p int, d []byte) {
	end := p + len(d)
	if e.fixEnd > 0 {
		e.fix = crc32c.Shift(e.fix, end-e.fixEnd) // over the zeros since, and d's bytes
	}
	e.fix ^= crc32c.Raw(d)
	e.fixEnd = end
}

// kernelSlack is the spare capacity the record kernel may write into past the last frame: it
// stores a piece's last partial 64 bytes whole (later frames overwrite the excess), and a
// length field before it finds that a changed record no longer fits.
const kernelSlack = 64

// recMeta describes a record frame to the record kernel (encode_amd64.s).
type recMeta struct {
	lead  uint32 // the frame's first bytes, in memory order: the magic byte, the metered size
	leadN uint32 // how many of lead's 4 bytes the frame has: 1 + the metered size's length
	wire  uint32 // the frame's length
	ts    uint32 // 1 if the frame has a timestamp
}

// newRecMeta describes a frame of metered size m (which fits in 3 bytes) and length w, as
// frameLead lays out its head.
func newRecMeta(m, w int, cmd, ts bool) recMeta {
	magic, varlen := frameLead(m, cmd, ts)
	meta := recMeta{
		lead:  uint32(magic) | bits.ReverseBytes32(uint32(m)<<(8*(3-varlen))),
		leadN: uint32(1 + varlen),
		wire:  uint32(w),
	}
	if ts {
		meta.ts = 1
	}
	return meta
}

// errChanged is the error for an append whose records changed while Add was encoding them
// (another goroutine wrote to them): the bytes gathered disagree with the sizes measured.
func errChanged(written, sized int) error {
	return fmt.Errorf("%w: records changed while being encoded (%d bytes written, %d sized)", ErrInvalid, written, sized)
}

// errFrameChanged is errChanged for the record kernel, which stops at the first frame whose
// bytes disagree with its size.
var errFrameChanged = fmt.Errorf("%w: records changed while being encoded (a frame disagrees with its size)", ErrInvalid)

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

// appendHead appends r's frame up to its body: size bytes, for the metered size m (which
// must fit in 3 bytes, as the caller's check of the append's size guarantees).
func appendHead(b []byte, r *Record, m, size int, cmd bool) []byte {
	m = min(m, 1<<24-1)
	magic, varlen := frameLead(m, cmd, r.HasTimestamp)
	n := len(b)
	b = slices.Grow(b, size)[:n+size]
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
	return b[:n+o]
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
	var sum uint32
	if e.c == CompressionNone {
		// The payload was folded while it was written; fold the rest and put the header's
		// checksum in front.
		rest := obj[e.folded:]
		whole := len(rest) &^ (crc32c.BlockSize - 1)
		e.fold.Blocks(rest[:whole])
		e.folded += whole
		sum = e.fold.SumAfter(crc32c.Checksum(h), rest[whole:])
		if e.fixEnd > 0 {
			sum ^= crc32c.Shift(e.fix, len(obj)-e.fixEnd)
		}
	} else {
		sum = crc32c.Checksum(obj)
	}
	if e.c == CompressionNone {
		obj = growAligned(obj, TrailerSize)
	}
	obj = binary.BigEndian.AppendUint32(obj, sum)
	if e.c == CompressionNone {
		e.buf = obj[:len(obj)-TrailerSize] // keep the buffer if append grew it
	} else {
		e.out = obj
	}
	return obj, nil
}

// alignedBuf returns a buffer of the given length and capacity whose payload (the bytes from
// HeaderSize on, which the checksum folds in blocks) starts on a 64-byte boundary, so that
// the fold's 64-byte loads each read one cache line, not two.
func alignedBuf(length, capacity int) []byte {
	raw := make([]byte, capacity+63)
	off := int(-(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) + HeaderSize) & 63)
	return raw[off : off+length : off+capacity]
}

// growAligned is slices.Grow for the encoder's buffer: room for n more bytes, the payload
// kept on a 64-byte boundary (alignedBuf).
func growAligned(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	c := 2 * cap(b)
	if cap(b) >= 1<<20 {
		c = cap(b) + cap(b)/4 // as append grows large slices
	}
	nb := alignedBuf(len(b), max(c, len(b)+n))
	copy(nb, b)
	return nb
}
