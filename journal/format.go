package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Kind tells a window from a fence.
type Kind uint8

const (
	KindWindow Kind = 1 // the commits of one window
	KindFence  Kind = 2 // closes the journal at its number
)

func (k Kind) String() string {
	switch k {
	case KindWindow:
		return "window"
	case KindFence:
		return "fence"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

const (
	// FormatVersion is the version byte this build writes and reads.
	FormatVersion = 1
	// HeadSize is the size of the fixed header. A reader that reads the first
	// HeadSize+Header.IndexLen bytes of an object has its header and index.
	HeadSize = 64
	// MaxIndexLen bounds an object's index (16 MiB), so a corrupt length cannot make a
	// reader allocate without bound.
	MaxIndexLen = 16 << 20
)

var (
	// ErrCorrupt is matched by every *CorruptError.
	ErrCorrupt = errors.New("journal: corrupt object")
	// ErrUnsupportedVersion: the object was written by a newer format.
	ErrUnsupportedVersion = errors.New("journal: unsupported format version")
)

// CorruptError says what is wrong with an object, and where.
type CorruptError struct {
	Key    string // the object's key, if the caller gave one
	Offset int64  // where in the object the problem was found
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal: corrupt object %q at byte %d: %s", e.Key, e.Offset, e.Reason)
}
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

var magic = [4]byte{'S', 'L', 'J', '1'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is an object's fixed header.
type Header struct {
	Kind        Kind
	Journal     ID
	Number      uint64
	Nonce       [16]byte // random per write: tells the writer its own object on read-back
	WrittenAtMs uint64   // the writer's clock; the lease is judged by the store's clock
	IndexLen    uint32   // bytes of index after the header (set by Encode and Decode)
}

// Section is one stream's part of a window.
type Section struct {
	Manifest   string   // the stream's manifest key
	Generation [16]byte // the stream's generation (a re-created stream has another)
	FirstSeq   uint64   // the stream's tail before this window
	NextSeq    uint64   // its tail after it
	Data       []byte   // the delta and records, in their writer's encoding
	// More, if set, follow Data in the section (records a writer carries), so that they are
	// copied once, into the object, rather than into Data first.
	More [][]byte
}

// size is the section's length in the object.
func (s *Section) size() int {
	n := len(s.Data)
	for _, b := range s.More {
		n += len(b)
	}
	return n
}

// crc is the CRC32C of the section's bytes.
func (s *Section) crc() uint32 {
	c := crc32.Checksum(s.Data, castagnoli)
	for _, b := range s.More {
		c = crc32.Update(c, castagnoli, b)
	}
	return c
}

// IndexRow locates one section in an object.
type IndexRow struct {
	Manifest   string
	Generation [16]byte
	Offset     uint64 // from the start of the object
	Length     uint64
	FirstSeq   uint64
	NextSeq    uint64
	CRC        uint32 // CRC32C of the section's bytes
}

// Encode builds an object. A fence must have no sections; a window's sections must name
// distinct (manifest, generation) pairs and have FirstSeq <= NextSeq.
func Encode(h Header, sections []Section) ([]byte, error) {
	switch h.Kind {
	case KindWindow:
	case KindFence:
		if len(sections) > 0 {
			return nil, errors.New("journal: a fence has no sections")
		}
	default:
		return nil, fmt.Errorf("journal: unknown kind %d", h.Kind)
	}
	type sk struct {
		m string
		g [16]byte
	}
	seen := make(map[sk]bool, len(sections))
	for i := range sections {
		s := &sections[i]
		if s.FirstSeq > s.NextSeq {
			return nil, fmt.Errorf("journal: section %q: first seq_num %d after next %d", s.Manifest, s.FirstSeq, s.NextSeq)
		}
		if seen[sk{s.Manifest, s.Generation}] {
			return nil, fmt.Errorf("journal: stream %q appears twice in one window", s.Manifest)
		}
		seen[sk{s.Manifest, s.Generation}] = true
	}
	// The index's size depends on the offsets it holds: size it with the final offsets by
	// encoding until its length stops changing (lengths only grow, so this ends).
	rows := make([]IndexRow, len(sections))
	total := 0
	for i := range sections {
		s := &sections[i]
		rows[i] = IndexRow{Manifest: s.Manifest, Generation: s.Generation, Length: uint64(s.size()),
			FirstSeq: s.FirstSeq, NextSeq: s.NextSeq, CRC: s.crc()}
		total += int(rows[i].Length)
	}
	var index []byte
	for {
		off := uint64(HeadSize + len(index))
		for i := range rows {
			rows[i].Offset = off
			off += rows[i].Length
		}
		next := encodeIndex(rows, h.Kind)
		if len(next) == len(index) {
			index = next
			break
		}
		index = next
	}
	if len(index) > MaxIndexLen {
		return nil, fmt.Errorf("journal: index of %d bytes is over %d", len(index), MaxIndexLen)
	}
	out := make([]byte, HeadSize, HeadSize+len(index)+total)
	copy(out[0:4], magic[:])
	out[4] = FormatVersion
	out[5] = byte(h.Kind)
	binary.LittleEndian.PutUint64(out[8:], uint64(h.Journal))
	binary.LittleEndian.PutUint64(out[16:], h.Number)
	copy(out[24:40], h.Nonce[:])
	binary.LittleEndian.PutUint64(out[40:], h.WrittenAtMs)
	binary.LittleEndian.PutUint32(out[48:], uint32(len(index)))
	crc := crc32.Update(crc32.Checksum(out[:60], castagnoli), castagnoli, index)
	binary.LittleEndian.PutUint32(out[60:], crc)
	out = append(out, index...)
	for i := range sections {
		out = append(out, sections[i].Data...)
		for _, b := range sections[i].More {
			out = append(out, b...)
		}
	}
	return out, nil
}

func encodeIndex(rows []IndexRow, kind Kind) []byte {
	if kind == KindFence {
		return nil
	}
	b := binary.AppendUvarint(nil, uint64(len(rows)))
	for _, r := range rows {
		b = binary.AppendUvarint(b, uint64(len(r.Manifest)))
		b = append(b, r.Manifest...)
		b = append(b, r.Generation[:]...)
		b = binary.AppendUvarint(b, r.Offset)
		b = binary.AppendUvarint(b, r.Length)
		b = binary.AppendUvarint(b, r.FirstSeq)
		b = binary.AppendUvarint(b, r.NextSeq)
		b = binary.LittleEndian.AppendUint32(b, r.CRC)
	}
	return b
}

// DecodeHeader reads the fixed header from the first HeadSize bytes of an object (key names
// it in errors). It checks the magic, version and kind; the CRC is checked by DecodeIndex,
// which needs the index too.
func DecodeHeader(key string, b []byte) (Header, error) {
	if len(b) < HeadSize {
		return Header{}, &CorruptError{Key: key, Offset: int64(len(b)), Reason: fmt.Sprintf("%d bytes, shorter than the %d-byte header", len(b), HeadSize)}
	}
	if [4]byte(b[0:4]) != magic {
		return Header{}, &CorruptError{Key: key, Reason: fmt.Sprintf("magic %q is not %q", b[0:4], magic[:])}
	}
	if b[4] != FormatVersion {
		return Header{}, fmt.Errorf("%w: object %q has version %d, this build reads %d", ErrUnsupportedVersion, key, b[4], FormatVersion)
	}
	h := Header{Kind: Kind(b[5]), Journal: ID(binary.LittleEndian.Uint64(b[8:])), Number: binary.LittleEndian.Uint64(b[16:]),
		WrittenAtMs: binary.LittleEndian.Uint64(b[40:]), IndexLen: binary.LittleEndian.Uint32(b[48:])}
	copy(h.Nonce[:], b[24:40])
	if h.Kind != KindWindow && h.Kind != KindFence {
		return Header{}, &CorruptError{Key: key, Offset: 5, Reason: fmt.Sprintf("unknown kind %d", b[5])}
	}
	if b[6] != 0 || b[7] != 0 || binary.LittleEndian.Uint64(b[52:]) != 0 {
		return Header{}, &CorruptError{Key: key, Offset: 6, Reason: "reserved bytes are not zero"}
	}
	if h.IndexLen > MaxIndexLen {
		return Header{}, &CorruptError{Key: key, Offset: 48, Reason: fmt.Sprintf("index length %d is over %d", h.IndexLen, MaxIndexLen)}
	}
	if h.Kind == KindFence && h.IndexLen != 0 {
		return Header{}, &CorruptError{Key: key, Offset: 48, Reason: "a fence with an index"}
	}
	return h, nil
}

// DecodeIndex reads the header and index from b, which holds at least the object's first
// HeadSize+IndexLen bytes, and checks the CRC over both. size is the object's whole size
// (every row must lie inside it), or -1 if unknown.
func DecodeIndex(key string, b []byte, size int64) (Header, []IndexRow, error) {
	h, err := DecodeHeader(key, b)
	if err != nil {
		return Header{}, nil, err
	}
	end := HeadSize + int(h.IndexLen)
	if len(b) < end {
		return Header{}, nil, &CorruptError{Key: key, Offset: int64(len(b)), Reason: fmt.Sprintf("index ends at byte %d, past the %d bytes read", end, len(b))}
	}
	index := b[HeadSize:end]
	want := binary.LittleEndian.Uint32(b[60:])
	if got := crc32.Update(crc32.Checksum(b[:60], castagnoli), castagnoli, index); got != want {
		return Header{}, nil, &CorruptError{Key: key, Offset: 60, Reason: fmt.Sprintf("header checksum %08x, computed %08x", want, got)}
	}
	if h.Kind == KindFence {
		if size >= 0 && size != int64(end) {
			return Header{}, nil, &CorruptError{Key: key, Offset: int64(end), Reason: fmt.Sprintf("a fence of %d bytes, not %d", size, end)}
		}
		return h, nil, nil
	}
	rows, err := decodeRows(key, index, size, uint64(end))
	if err != nil {
		return Header{}, nil, err
	}
	return h, rows, nil
}

func decodeRows(key string, index []byte, size int64, dataStart uint64) ([]IndexRow, error) {
	d := &decoder{key: key, b: index, base: HeadSize}
	n := d.uv()
	if d.err == nil && n > uint64(len(index)) {
		d.fail("section count %d is more than the index could hold", n)
	}
	var rows []IndexRow
	type stream struct {
		m string
		g [16]byte
	}
	seen := map[stream]bool{}
	next := dataStart
	for i := uint64(0); i < n && d.err == nil; i++ {
		var r IndexRow
		r.Manifest = string(d.bytes(d.uv()))
		copy(r.Generation[:], d.bytes(16))
		r.Offset, r.Length, r.FirstSeq, r.NextSeq = d.uv(), d.uv(), d.uv(), d.uv()
		crc := d.bytes(4)
		if d.err != nil {
			break
		}
		r.CRC = binary.LittleEndian.Uint32(crc)
		switch {
		case r.Offset != next:
			d.fail("section %d starts at %d, not at %d where the previous one ends", i, r.Offset, next)
		case r.Length > math.MaxInt64-r.Offset:
			d.fail("section %d length %d overflows", i, r.Length)
		case size >= 0 && r.Offset+r.Length > uint64(size):
			d.fail("section %d ends at %d, past the object's %d bytes", i, r.Offset+r.Length, size)
		case r.FirstSeq > r.NextSeq:
			d.fail("section %d: first seq_num %d after next %d", i, r.FirstSeq, r.NextSeq)
		case seen[stream{r.Manifest, r.Generation}]:
			d.fail("section %d: stream %q appears twice", i, r.Manifest)
		}
		seen[stream{r.Manifest, r.Generation}] = true
		next = r.Offset + r.Length
		rows = append(rows, r)
	}
	if d.err == nil && d.off != len(index) {
		d.fail("%d bytes after the last index row", len(index)-d.off)
	}
	if d.err == nil && size >= 0 && next != uint64(size) {
		d.fail("sections end at %d, the object has %d bytes", next, size)
	}
	return rows, d.err
}

// Section checks and returns a section's bytes, read from the object at r.Offset (data
// holds exactly r.Length bytes).
func (r IndexRow) Section(key string, data []byte) ([]byte, error) {
	if uint64(len(data)) != r.Length {
		return nil, &CorruptError{Key: key, Offset: int64(r.Offset), Reason: fmt.Sprintf("section of %q: %d bytes read, %d expected", r.Manifest, len(data), r.Length)}
	}
	if got := crc32.Checksum(data, castagnoli); got != r.CRC {
		return nil, &CorruptError{Key: key, Offset: int64(r.Offset), Reason: fmt.Sprintf("section of %q: checksum %08x, computed %08x", r.Manifest, r.CRC, got)}
	}
	return data, nil
}

type decoder struct {
	key  string
	b    []byte
	off  int
	base int64
	err  error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &CorruptError{Key: d.key, Offset: d.base + int64(d.off), Reason: fmt.Sprintf(format, args...)}
	}
}

func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("%d bytes wanted, %d left", n, len(d.b)-d.off)
		return nil
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}
