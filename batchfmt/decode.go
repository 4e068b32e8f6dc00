package batchfmt

import (
	"encoding/binary"
	"hash/crc32"
)

// AppendMeta describes one append of a decoded batch.
type AppendMeta struct {
	RecordCount  int
	MatchSeqNum  *uint64 // nil when the append had none
	FencingToken *string // nil when the append had none
	MeteredBytes int     // the sum of the records' metered sizes
	FirstRecord  int     // the index, in the whole batch, of the append's first record
}

// Batch is a decoded batch object. It aliases the bytes given to Decode when they were
// stored uncompressed; the caller must not modify them while the Batch is in use.
type Batch struct {
	compression Compression
	payload     []byte // the uncompressed payload; offset 0 is object offset HeaderSize
	appends     []AppendMeta
	spans       []int // for append i, its record frames are payload[spans[2i]:spans[2i+1]]
	records     int
	metered     int
}

// Decode checks and decodes one batch object. It checks, in order, the length, magic,
// version, compression, reserved bits, stored size and CRC32C of the object, then
// decompresses the payload (bounded by the declared size), then walks every append header
// and every record frame, checking each length against what remains before using it. Any
// failure is a *CorruptError matching ErrCorrupt. After a successful Decode, iteration
// does not fail.
func Decode(data []byte) (*Batch, error) {
	if len(data) < HeaderSize+TrailerSize {
		return nil, corrupt(0, "object of %d bytes is shorter than header and trailer (%d)", len(data), HeaderSize+TrailerSize)
	}
	if string(data[:4]) != Magic {
		return nil, corrupt(0, "bad magic %q", data[:4])
	}
	if data[4] != Version {
		return nil, corrupt(4, "unsupported format version %d (this reader knows %d)", data[4], Version)
	}
	c := Compression(data[5])
	if !c.Valid() {
		return nil, corrupt(5, "unknown compression type %d", data[5])
	}
	if data[6] != 0 || data[7] != 0 {
		return nil, corrupt(6, "reserved bytes are not zero")
	}
	nAppends := binary.BigEndian.Uint32(data[8:])
	nRecords := binary.BigEndian.Uint32(data[12:])
	rawLen := binary.BigEndian.Uint32(data[16:])
	storedLen := binary.BigEndian.Uint32(data[20:])
	if uint64(storedLen) != uint64(len(data)-HeaderSize-TrailerSize) {
		return nil, corrupt(20, "stored size %d does not match the object's %d payload bytes", storedLen, len(data)-HeaderSize-TrailerSize)
	}
	if rawLen > MaxObjectBytes {
		return nil, corrupt(16, "payload size %d exceeds the limit of %d", rawLen, MaxObjectBytes)
	}
	if c == CompressionNone && rawLen != storedLen {
		return nil, corrupt(16, "payload size %d differs from stored size %d in an uncompressed object", rawLen, storedLen)
	}
	// Every append holds at least one record and takes at least appendHeaderSize bytes; every
	// record frame takes at least 4 bytes. These bound the counts before any allocation.
	if uint64(nAppends)*appendHeaderSize > uint64(rawLen) {
		return nil, corrupt(8, "append count %d cannot fit in %d payload bytes", nAppends, rawLen)
	}
	if nRecords < nAppends || uint64(nRecords)*4 > uint64(rawLen) || uint64(nRecords) > uint64(nAppends)*MaxAppendRecords {
		return nil, corrupt(12, "record count %d is impossible for %d appends in %d payload bytes", nRecords, nAppends, rawLen)
	}
	body := data[:len(data)-TrailerSize]
	want := binary.BigEndian.Uint32(data[len(data)-TrailerSize:])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return nil, corrupt(len(data)-TrailerSize, "CRC32C mismatch: stored %08x, computed %08x", want, got)
	}
	payload := data[HeaderSize : HeaderSize+int(storedLen)]
	if c == CompressionZstd {
		dst := make([]byte, 0, int(rawLen))
		out, err := zstdDecoder().DecodeAll(payload, dst)
		if err != nil {
			return nil, &CorruptError{Offset: HeaderSize, Reason: "zstd payload does not decompress to the declared size", Err: err}
		}
		if len(out) != int(rawLen) {
			return nil, corrupt(HeaderSize, "zstd payload decompressed to %d bytes, header says %d", len(out), rawLen)
		}
		payload = out
	}
	b := &Batch{compression: c, payload: payload}
	if err := b.index(int(nAppends), int(nRecords)); err != nil {
		return nil, err
	}
	return b, nil
}

// index walks the append headers and record frames, filling appends and spans.
func (b *Batch) index(nAppends, nRecords int) error {
	p := b.payload
	b.appends = make([]AppendMeta, nAppends)
	b.spans = make([]int, 2*nAppends)
	var seqs []uint64
	var tokens []string
	var hdrs []Header
	off := 0
	for i := 0; i < nAppends; i++ {
		if len(p)-off < appendHeaderSize {
			return corrupt(HeaderSize+off, "append %d header truncated", i)
		}
		flags := p[off]
		if flags&appReserved != 0 {
			return corrupt(HeaderSize+off, "append %d has reserved flag bits %#x", i, flags)
		}
		count := int(binary.BigEndian.Uint16(p[off+1:]))
		metered := binary.BigEndian.Uint32(p[off+3:])
		length := binary.BigEndian.Uint32(p[off+7:])
		if count < 1 || count > MaxAppendRecords {
			return corrupt(HeaderSize+off+1, "append %d record count %d outside 1..%d", i, count, MaxAppendRecords)
		}
		if metered > MaxAppendBytes {
			return corrupt(HeaderSize+off+3, "append %d metered size %d exceeds %d", i, metered, MaxAppendBytes)
		}
		off += appendHeaderSize
		m := &b.appends[i]
		m.RecordCount = count
		m.MeteredBytes = int(metered)
		m.FirstRecord = b.records
		if flags&appHasMatchSeqNum != 0 {
			if len(p)-off < 8 {
				return corrupt(HeaderSize+off, "append %d match_seq_num truncated", i)
			}
			if seqs == nil {
				seqs = make([]uint64, 0, nAppends)
			}
			seqs = append(seqs, binary.BigEndian.Uint64(p[off:]))
			m.MatchSeqNum = &seqs[len(seqs)-1]
			off += 8
		}
		if flags&appHasFencingToken != 0 {
			if len(p)-off < 1 {
				return corrupt(HeaderSize+off, "append %d fencing token length truncated", i)
			}
			n := int(p[off])
			if n > MaxFencingTokenLen {
				return corrupt(HeaderSize+off, "append %d fencing token length %d exceeds %d", i, n, MaxFencingTokenLen)
			}
			off++
			if len(p)-off < n {
				return corrupt(HeaderSize+off, "append %d fencing token truncated", i)
			}
			if tokens == nil {
				tokens = make([]string, 0, nAppends)
			}
			tokens = append(tokens, string(p[off:off+n]))
			m.FencingToken = &tokens[len(tokens)-1]
			off += n
		}
		if uint64(length) > uint64(len(p)-off) {
			return corrupt(HeaderSize+off-4, "append %d records length %d exceeds the %d bytes left", i, length, len(p)-off)
		}
		end := off + int(length)
		b.spans[2*i], b.spans[2*i+1] = off, end
		sum := 0
		for j := 0; j < count; j++ {
			var r Record
			var next int
			var err error
			r, next, hdrs, err = parseRecord(p, off, end, hdrs)
			if err != nil {
				return err
			}
			sum += r.MeteredSize()
			off = next
		}
		if off != end {
			return corrupt(HeaderSize+off, "append %d has %d bytes after its %d records", i, end-off, count)
		}
		if sum != int(metered) {
			return corrupt(HeaderSize+b.spans[2*i]-4, "append %d metered size %d, records sum to %d", i, metered, sum)
		}
		b.records += count
		b.metered += sum
		if b.records > nRecords {
			return corrupt(12, "records exceed the header's count %d", nRecords)
		}
	}
	if off != len(p) {
		return corrupt(HeaderSize+off, "%d bytes after the last append", len(p)-off)
	}
	if b.records != nRecords {
		return corrupt(12, "header says %d records, appends hold %d", nRecords, b.records)
	}
	return nil
}

// readLen reads a 2-byte length with the 0xFFFF escape to 4 bytes.
func readLen(p []byte, off, end int) (n, next int, ok bool) {
	if end-off < 2 {
		return 0, off, false
	}
	n = int(p[off])<<8 | int(p[off+1])
	off += 2
	if n != lenEscape {
		return n, off, true
	}
	if end-off < 4 {
		return 0, off, false
	}
	n = int(binary.BigEndian.Uint32(p[off:]))
	if n < lenEscape { // escapes are canonical: only for values that need them
		return 0, off, false
	}
	return n, off + 4, true
}

// parseRecord decodes the record frame at p[off:] that must end by end. hdrs is reused for
// the headers; the returned Record's slices alias p and hdrs.
func parseRecord(p []byte, off, end int, hdrs []Header) (Record, int, []Header, error) {
	start := off
	var r Record
	if end-off < 1 {
		return r, off, hdrs, corrupt(HeaderSize+off, "record truncated")
	}
	magic := p[off]
	off++
	typ := magic & recTypeMask
	if typ != recTypeCommand && typ != recTypeEnvelope {
		return r, off, hdrs, corrupt(HeaderSize+start, "unknown record type %d", typ)
	}
	if magic&recReserved != 0 {
		return r, off, hdrs, corrupt(HeaderSize+start, "reserved record magic bits %#x", magic)
	}
	vl := int((magic&recVarlenMask)>>recVarlenShift) + 1
	if vl > 3 {
		return r, off, hdrs, corrupt(HeaderSize+start, "metered size length %d bytes is not 1..3", vl)
	}
	if end-off < vl {
		return r, off, hdrs, corrupt(HeaderSize+off, "metered size truncated")
	}
	metered := 0
	for k := 0; k < vl; k++ {
		metered = metered<<8 | int(p[off+k])
	}
	off += vl
	if vl > 1 && metered < 1<<(8*(vl-1)) {
		return r, off, hdrs, corrupt(HeaderSize+start+1, "metered size %d not in its shortest form (%d bytes)", metered, vl)
	}
	if metered > MaxAppendBytes || metered < 8 {
		return r, off, hdrs, corrupt(HeaderSize+start+1, "record metered size %d outside 8..%d", metered, MaxAppendBytes)
	}
	if magic&recHasTimestamp != 0 {
		if end-off < 8 {
			return r, off, hdrs, corrupt(HeaderSize+off, "record timestamp truncated")
		}
		r.Timestamp = binary.BigEndian.Uint64(p[off:])
		r.HasTimestamp = true
		off += 8
	}
	nh, off2, ok := readLen(p, off, end)
	if !ok {
		return r, off, hdrs, corrupt(HeaderSize+off, "record header count truncated or not canonical")
	}
	off = off2
	// Each header takes at least 4 bytes here and 2 metered bytes; bound before allocating.
	if nh > (end-off)/4 || 8+2*nh > metered {
		return r, off, hdrs, corrupt(HeaderSize+off, "header count %d cannot fit", nh)
	}
	hdrs = hdrs[:0]
	rest := metered - 8 - 2*nh // metered bytes left for names, values and body
	empty := 0
	for k := 0; k < nh; k++ {
		var nl, vlen int
		nl, off2, ok = readLen(p, off, end)
		if !ok || nl > end-off2 || nl > rest {
			return r, off, hdrs, corrupt(HeaderSize+off, "header %d name length invalid", k)
		}
		name := p[off2 : off2+nl : off2+nl]
		off = off2 + nl
		rest -= nl
		vlen, off2, ok = readLen(p, off, end)
		if !ok || vlen > end-off2 || vlen > rest {
			return r, off, hdrs, corrupt(HeaderSize+off, "header %d value length invalid", k)
		}
		value := p[off2 : off2+vlen : off2+vlen]
		off = off2 + vlen
		rest -= vlen
		if nl == 0 {
			empty++
		}
		hdrs = append(hdrs, Header{Name: name, Value: value})
	}
	if rest > end-off {
		return r, off, hdrs, corrupt(HeaderSize+off, "record body of %d bytes exceeds the %d bytes left", rest, end-off)
	}
	r.Body = p[off : off+rest : off+rest]
	off += rest
	if nh > 0 {
		r.Headers = hdrs
	}
	if (typ == recTypeCommand) != (empty > 0) {
		return r, off, hdrs, corrupt(HeaderSize+start, "record type %d disagrees with its headers", typ)
	}
	if typ == recTypeCommand {
		if err := r.Validate(); err != nil {
			return r, off, hdrs, &CorruptError{Offset: HeaderSize + start, Reason: "invalid command record", Err: err}
		}
	}
	return r, off, hdrs, nil
}

// Compression returns the compression the object was stored with.
func (b *Batch) Compression() Compression { return b.compression }

// NumAppends returns the number of appends in the batch.
func (b *Batch) NumAppends() int { return len(b.appends) }

// Append returns the metadata of append i (0 <= i < NumAppends).
func (b *Batch) Append(i int) AppendMeta { return b.appends[i] }

// NumRecords returns the number of records in the batch.
func (b *Batch) NumRecords() int { return b.records }

// MeteredBytes returns the metered size of all records in the batch.
func (b *Batch) MeteredBytes() int { return b.metered }

// PayloadSize returns the size of the uncompressed payload.
func (b *Batch) PayloadSize() int { return len(b.payload) }

// Iter returns an iterator over the batch's records, in order. If skip is not nil, appends
// for which skip(i) is true are skipped wholly.
func (b *Batch) Iter(skip func(appendIndex int) bool) *Iterator {
	return &Iterator{b: b, skip: skip, ai: -1}
}

// Iterator walks a batch's records without materialising them all.
type Iterator struct {
	b         *Batch
	skip      func(int) bool
	ai        int // current append
	left      int // records left in the current append
	off, end  int
	rec       Record
	hdrs      []Header
	err       error
	recordIdx int
}

// Next advances to the next record, reporting false at the end or on corruption (see Err).
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	for it.left == 0 {
		if it.ai >= 0 && it.off != it.end {
			it.err = corrupt(HeaderSize+it.off, "append %d has bytes after its records", it.ai)
			return false
		}
		it.ai++
		if it.ai >= len(it.b.appends) {
			it.ai = len(it.b.appends)
			it.off, it.end = 0, 0
			return false
		}
		if it.skip != nil && it.skip(it.ai) {
			it.off, it.end = 0, 0
			continue
		}
		it.off, it.end = it.b.spans[2*it.ai], it.b.spans[2*it.ai+1]
		it.left = it.b.appends[it.ai].RecordCount
		it.recordIdx = it.b.appends[it.ai].FirstRecord - 1
	}
	r, next, hdrs, err := parseRecord(it.b.payload, it.off, it.end, it.hdrs)
	it.hdrs = hdrs
	if err != nil {
		it.err = err
		return false
	}
	it.rec = r
	it.off = next
	it.left--
	it.recordIdx++
	return true
}

// Record returns the current record. It is valid until the next call of Next; its byte
// slices alias the batch's buffer and must not be modified.
func (it *Iterator) Record() Record { return it.rec }

// AppendIndex returns the index of the current record's append.
func (it *Iterator) AppendIndex() int { return it.ai }

// RecordIndex returns the index of the current record in the whole batch.
func (it *Iterator) RecordIndex() int { return it.recordIdx }

// Err returns the corruption found while iterating, if any (a *CorruptError).
func (it *Iterator) Err() error { return it.err }
