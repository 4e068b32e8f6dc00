package manifest

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"

	"github.com/sluice-dev/sluice/journal"
)

// Format constants (see the package doc for the layout).
const (
	// FormatVersion is the version byte of a manifest without a committer role, and of
	// segments. A manifest with one is FormatVersionCommitter: the role follows the entries.
	// Both are read; a build that reads only version 1 refuses a manifest with a committer
	// (ErrUnsupportedVersion) rather than misread it.
	FormatVersion          = 1
	FormatVersionCommitter = 2
	// FormatVersionJournal is the version of a manifest with a journal pointer or a ranged
	// entry: the version 2 body (the role may be empty), then the pointer, and every entry
	// carries its offset and length. A segment holding a ranged entry is version
	// SegmentVersionRanged, whose entries carry them too.
	FormatVersionJournal = 3
	SegmentVersionRanged = 2
	headerLen            = 5 // magic + version
	trailerLen           = 4 // CRC32C
)

// crcTable is the CRC-32C (Castagnoli) table of the trailers.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

var (
	manifestMagic = [4]byte{'S', 'L', 'M', 'F'}
	segmentMagic  = [4]byte{'S', 'L', 'S', 'G'}
)

// Segment is the decoded content of a segment object: entries (Level 0) or references to
// lower-level segments (Level > 0), oldest first.
type Segment struct {
	Level      uint8
	Generation [16]byte
	Entries    []Entry
	Refs       []SegmentRef
}

type encoder struct{ b []byte }

func (e *encoder) uv(v uint64)         { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) byte1(v byte)        { e.b = append(e.b, v) }
func (e *encoder) str(s string)        { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) raw(p []byte)        { e.b = append(e.b, p...) }
func (e *encoder) boolean(v bool)      { e.byte1(b2u(v)) }
func (e *encoder) position(p Position) { e.uv(p.SeqNum); e.uv(p.Timestamp) }

func b2u(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func frame(magic [4]byte, version byte, body func(*encoder)) []byte {
	e := &encoder{b: make([]byte, 0, 4096)}
	e.raw(magic[:])
	e.byte1(version)
	body(e)
	e.b = binary.BigEndian.AppendUint32(e.b, crc32.Checksum(e.b, crcTable))
	return e.b
}

// Encode returns the manifest object bytes of s. Maps are written in key order, so equal
// states encode to equal bytes.
func (s *State) Encode() []byte {
	version := byte(FormatVersion)
	switch {
	case s.Journal != nil || anyRanged(s.Entries):
		version = FormatVersionJournal
	case s.Committer.ID != "":
		version = FormatVersionCommitter
	}
	ranged := version == FormatVersionJournal
	return frame(manifestMagic, version, func(e *encoder) {
		e.raw(s.Generation[:])
		e.uv(s.WriteCounter)
		e.uv(uint64(len(s.RecentWrites)))
		for _, n := range s.RecentWrites {
			e.raw(n[:])
		}
		e.uv(s.CreatedMs)
		e.position(s.Tail)
		e.str(s.FencingToken)
		e.uv(s.TrimPoint)
		c := s.Config
		e.byte1(byte(c.Timestamping.Mode))
		e.boolean(c.Timestamping.Uncapped)
		e.boolean(c.Retention.Infinite)
		e.uv(c.Retention.AgeSecs)
		e.uv(c.DeleteOnEmpty.MinAgeSecs)
		e.boolean(c.QueueMode)
		e.str(c.StorageClass)
		e.uv(uint64(len(s.Groups)))
		for _, name := range slices.Sorted(maps.Keys(s.Groups)) {
			g := s.Groups[name]
			e.str(name)
			e.uv(g.Epoch)
			e.uv(g.Checkpoint)
		}
		e.uv(uint64(len(s.Producers)))
		for _, id := range slices.Sorted(maps.Keys(s.Producers)) {
			p := s.Producers[id]
			e.str(id)
			e.uv(p.LastBatch)
			e.uv(p.LastSeenMs)
		}
		encodeRefs(e, s.Segments)
		encodeEntries(e, s.Entries, ranged)
		if version >= FormatVersionCommitter {
			e.str(s.Committer.ID)
			e.str(s.Committer.URL)
			e.uv(s.Committer.UntilMs)
		}
		if version == FormatVersionJournal {
			e.boolean(s.Journal != nil)
			if s.Journal != nil {
				e.uv(uint64(s.Journal.ID))
				e.uv(s.Journal.From)
			}
		}
	})
}

func encodeRefs(e *encoder, refs []SegmentRef) {
	e.uv(uint64(len(refs)))
	for i := range refs {
		r := &refs[i]
		e.str(r.Key)
		e.byte1(r.Level)
		e.uv(r.FirstSeq)
		e.uv(r.EndSeq)
		e.uv(r.MinTS)
		e.uv(r.MaxTS)
		e.uv(r.Entries)
		e.uv(r.MeteredBytes)
		e.uv(r.ObjectBytes)
		e.uv(r.MaxArrival)
	}
}

// encodeEntries writes entries; ranged formats (manifest v3, segment v2) add each entry's
// offset and length.
func encodeEntries(e *encoder, entries []Entry, ranged bool) {
	e.uv(uint64(len(entries)))
	for i := range entries {
		e.str(entries[i].Key)
		encodeEntryBody(e, &entries[i], ranged)
	}
}

// encodeEntryBody writes an entry's fields after its key.
func encodeEntryBody(e *encoder, en *Entry, ranged bool) {
	e.uv(en.FirstSeq)
	e.uv(en.Records)
	e.uv(en.MeteredBytes)
	e.uv(en.ObjectBytes)
	e.uv(en.MinTS)
	e.uv(en.MaxTS)
	e.uv(en.Floor)
	e.uv(en.Arrival)
	e.byte1(byte(en.TSMode))
	e.boolean(en.Uncapped)
	e.str(en.ProducerID)
	e.uv(en.BatchNum)
	e.uv(uint64(en.Appends))
	e.uv(uint64(len(en.Rejected)))
	for _, r := range en.Rejected {
		e.uv(uint64(r.Append))
		e.byte1(byte(r.Reason))
		e.uv(r.Expected)
		e.str(r.Actual)
	}
	if ranged {
		e.uv(en.Offset)
		e.uv(en.Length)
	}
}

// Encode returns the segment object bytes: version 1, or SegmentVersionRanged for a level-0
// segment holding a ranged entry.
func (g *Segment) Encode() []byte {
	version := byte(FormatVersion)
	if g.Level == 0 && anyRanged(g.Entries) {
		version = SegmentVersionRanged
	}
	return frame(segmentMagic, version, func(e *encoder) {
		e.byte1(g.Level)
		e.raw(g.Generation[:])
		if g.Level == 0 {
			encodeEntries(e, g.Entries, version == SegmentVersionRanged)
		} else {
			encodeRefs(e, g.Refs)
		}
	})
}

type decoder struct {
	key string
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = corrupt(d.key, format, args...)
	}
}

func (d *decoder) uv(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint for %s", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte1(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("truncated at %s", what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) boolean(what string) bool {
	switch v := d.byte1(what); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bad boolean %d for %s", v, what)
		return false
	}
}

func (d *decoder) bytes(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b) < n {
		d.fail("truncated at %s", what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str(what string) string {
	n := d.uv(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("length %d of %s exceeds the remaining %d bytes", n, what, len(d.b))
		return ""
	}
	return string(d.bytes(int(n), what))
}

// count reads an element count, checking it against the bytes left (each element takes at
// least minSize bytes), so a corrupt count cannot make the decoder allocate without bound.
func (d *decoder) count(what string, minSize int) int {
	n := d.uv(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/minSize) {
		d.fail("count %d of %s exceeds what the remaining %d bytes can hold", n, what, len(d.b))
		return 0
	}
	return int(n)
}

// unframe checks an object's frame and returns a decoder of its body and its version, one of
// versions.
func unframe(key string, magic [4]byte, data []byte, versions ...byte) (*decoder, byte, error) {
	if len(data) < headerLen+trailerLen {
		return nil, 0, corrupt(key, "object of %d bytes is shorter than header and checksum", len(data))
	}
	if [4]byte(data[:4]) != magic {
		return nil, 0, corrupt(key, "bad magic %q", data[:4])
	}
	body, sum := data[:len(data)-trailerLen], binary.BigEndian.Uint32(data[len(data)-trailerLen:])
	if got := crc32.Checksum(body, crcTable); got != sum {
		return nil, 0, corrupt(key, "checksum mismatch (stored %08x, computed %08x)", sum, got)
	}
	v := data[4]
	if !slices.Contains(versions, v) {
		return nil, 0, &versionError{key: key, version: v}
	}
	return &decoder{key: key, b: body[headerLen:]}, v, nil
}

type versionError struct {
	key     string
	version byte
}

func (e *versionError) Error() string {
	return fmt.Sprintf("manifest: object %q: unsupported format version %d (this build reads manifests %d to %d, segments %d and %d)", e.key, e.version, FormatVersion, FormatVersionJournal, FormatVersion, SegmentVersionRanged)
}
func (e *versionError) Unwrap() error { return ErrUnsupportedVersion }

// Decode parses a manifest object. key is used in error messages only. Every malformed input
// yields an error matching ErrCorrupt (or ErrUnsupportedVersion); Decode never panics.
func Decode(key string, data []byte) (*State, error) {
	d, version, err := unframe(key, manifestMagic, data, FormatVersion, FormatVersionCommitter, FormatVersionJournal)
	if err != nil {
		return nil, err
	}
	s := &State{}
	copy(s.Generation[:], d.bytes(16, "generation"))
	s.WriteCounter = d.uv("write counter")
	if n := d.count("recent writes", 8); n > 0 {
		s.RecentWrites = make([][8]byte, n)
		for i := range s.RecentWrites {
			copy(s.RecentWrites[i][:], d.bytes(8, "write nonce"))
		}
	}
	s.CreatedMs = d.uv("created")
	s.Tail.SeqNum = d.uv("tail seq_num")
	s.Tail.Timestamp = d.uv("tail timestamp")
	s.FencingToken = d.str("fencing token")
	s.TrimPoint = d.uv("trim point")
	s.Config.Timestamping.Mode = TimestampingMode(d.byte1("timestamping mode"))
	s.Config.Timestamping.Uncapped = d.boolean("uncapped")
	s.Config.Retention.Infinite = d.boolean("retention infinite")
	s.Config.Retention.AgeSecs = d.uv("retention age")
	s.Config.DeleteOnEmpty.MinAgeSecs = d.uv("delete_on_empty")
	s.Config.QueueMode = d.boolean("queue mode")
	s.Config.StorageClass = d.str("storage class")
	n := d.count("groups", 3)
	s.Groups = make(map[string]Group, n)
	for range n {
		name := d.str("group name")
		g := Group{Epoch: d.uv("group epoch"), Checkpoint: d.uv("group checkpoint")}
		if _, dup := s.Groups[name]; dup && d.err == nil {
			d.fail("duplicate group %q", name)
		}
		s.Groups[name] = g
	}
	n = d.count("producers", 3)
	s.Producers = make(map[string]ProducerState, n)
	for range n {
		id := d.str("producer id")
		p := ProducerState{LastBatch: d.uv("producer batch"), LastSeenMs: d.uv("producer seen")}
		if _, dup := s.Producers[id]; dup && d.err == nil {
			d.fail("duplicate producer %q", id)
		}
		s.Producers[id] = p
	}
	s.Segments = decodeRefs(d)
	s.Entries = decodeEntries(d, version == FormatVersionJournal)
	if version >= FormatVersionCommitter {
		s.Committer = CommitterRole{ID: d.str("committer id"), URL: d.str("committer url"), UntilMs: d.uv("committer until")}
		if d.err == nil && s.Committer.ID == "" && (version == FormatVersionCommitter || s.Committer != CommitterRole{}) {
			d.fail("committer role without an id")
		}
	}
	if version == FormatVersionJournal {
		if d.boolean("journal pointer") {
			s.Journal = &JournalPointer{ID: journal.ID(d.uv("journal id")), From: d.uv("journal from")}
		}
		if d.err == nil && s.Journal == nil && !anyRanged(s.Entries) {
			d.fail("version %d without a journal pointer or a ranged entry", version)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := s.check(key); err != nil {
		return nil, err
	}
	return s, nil
}

func decodeRefs(d *decoder) []SegmentRef {
	n := d.count("segment refs", 10)
	if n == 0 {
		return nil
	}
	refs := make([]SegmentRef, n)
	for i := range refs {
		r := &refs[i]
		r.Key = d.str("segment key")
		r.Level = d.byte1("segment level")
		r.FirstSeq = d.uv("segment first seq")
		r.EndSeq = d.uv("segment end seq")
		r.MinTS = d.uv("segment min ts")
		r.MaxTS = d.uv("segment max ts")
		r.Entries = d.uv("segment entries")
		r.MeteredBytes = d.uv("segment metered bytes")
		r.ObjectBytes = d.uv("segment object bytes")
		r.MaxArrival = d.uv("segment max arrival")
	}
	return refs
}

func decodeEntries(d *decoder, ranged bool) []Entry {
	n := d.count("entries", 17)
	if n == 0 {
		return nil
	}
	entries := make([]Entry, n)
	for i := range entries {
		entries[i].Key = d.str("entry key")
		decodeEntryBody(d, &entries[i], ranged)
	}
	return entries
}

// decodeEntryBody reads an entry's fields after its key (see encodeEntryBody).
func decodeEntryBody(d *decoder, en *Entry, ranged bool) {
	en.FirstSeq = d.uv("entry first seq")
	en.Records = d.uv("entry records")
	en.MeteredBytes = d.uv("entry metered bytes")
	en.ObjectBytes = d.uv("entry object bytes")
	en.MinTS = d.uv("entry min ts")
	en.MaxTS = d.uv("entry max ts")
	en.Floor = d.uv("entry floor")
	en.Arrival = d.uv("entry arrival")
	en.TSMode = TimestampingMode(d.byte1("entry timestamping mode"))
	en.Uncapped = d.boolean("entry uncapped")
	en.ProducerID = d.str("entry producer id")
	en.BatchNum = d.uv("entry batch number")
	appends := d.uv("entry appends")
	if appends > 1<<32-1 {
		d.fail("entry appends %d out of range", appends)
	}
	en.Appends = uint32(appends)
	if nr := d.count("rejections", 4); nr > 0 {
		en.Rejected = make([]Rejection, nr)
		for j := range en.Rejected {
			r := &en.Rejected[j]
			idx := d.uv("rejection append")
			if idx >= appends && d.err == nil {
				d.fail("rejection of append %d in an object of %d appends", idx, appends)
			}
			r.Append = uint32(idx)
			r.Reason = RejectReason(d.byte1("rejection reason"))
			r.Expected = d.uv("rejection expected")
			r.Actual = d.str("rejection actual")
		}
	}
	if ranged {
		en.Offset = d.uv("entry offset")
		en.Length = d.uv("entry length")
	}
}

// DecodeSegment parses a segment object; errors as for Decode.
func DecodeSegment(key string, data []byte) (*Segment, error) {
	d, version, err := unframe(key, segmentMagic, data, FormatVersion, SegmentVersionRanged)
	if err != nil {
		return nil, err
	}
	g := &Segment{Level: d.byte1("level")}
	copy(g.Generation[:], d.bytes(16, "generation"))
	if g.Level == 0 {
		g.Entries = decodeEntries(d, version == SegmentVersionRanged)
	} else {
		g.Refs = decodeRefs(d)
	}
	if d.err == nil && version == SegmentVersionRanged && !anyRanged(g.Entries) {
		d.fail("segment version %d without a ranged entry", version)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := checkChain(key, g.Refs, g.Entries, int(g.Level)-1); err != nil {
		return nil, err
	}
	return g, nil
}

// check verifies the invariants a decoded state must satisfy.
func (s *State) check(key string) error {
	if s.Config.Timestamping.Mode > Arrival {
		return corrupt(key, "unknown timestamping mode %d", s.Config.Timestamping.Mode)
	}
	if len(s.RecentWrites) > maxRecentWrites {
		return corrupt(key, "%d recent writes, more than %d", len(s.RecentWrites), maxRecentWrites)
	}
	if err := checkChain(key, s.Segments, s.Entries, -1); err != nil {
		return err
	}
	if n := len(s.Entries); n > 0 && s.Entries[n-1].EndSeq() > s.Tail.SeqNum {
		return corrupt(key, "last entry ends at %d, past the tail %d", s.Entries[n-1].EndSeq(), s.Tail.SeqNum)
	}
	if n := len(s.Entries); n == 0 && len(s.Segments) > 0 && s.Segments[len(s.Segments)-1].EndSeq > s.Tail.SeqNum {
		return corrupt(key, "last segment ends past the tail %d", s.Tail.SeqNum)
	}
	return nil
}

// checkChain verifies that refs then entries cover contiguous, ordered seq_num ranges, that
// ref levels do not increase (and all equal refLevel when it is >= 0), and that entries are
// well formed.
func checkChain(key string, refs []SegmentRef, entries []Entry, refLevel int) error {
	var next uint64
	have := false
	for i, r := range refs {
		if r.EndSeq < r.FirstSeq {
			return corrupt(key, "segment ref %d ends before it starts", i)
		}
		if refLevel >= 0 && int(r.Level) != refLevel {
			return corrupt(key, "segment ref %d has level %d", i, r.Level)
		}
		if i > 0 && r.Level > refs[i-1].Level {
			return corrupt(key, "segment ref %d: level %d after level %d", i, r.Level, refs[i-1].Level)
		}
		if have && r.FirstSeq != next {
			return corrupt(key, "segment ref %d starts at %d, not at %d", i, r.FirstSeq, next)
		}
		next, have = r.EndSeq, true
	}
	for i := range entries {
		en := &entries[i]
		if have && en.FirstSeq != next {
			return corrupt(key, "entry %d starts at %d, not at %d", i, en.FirstSeq, next)
		}
		if en.EndSeq() < en.FirstSeq {
			return corrupt(key, "entry %d: record count overflows", i)
		}
		if en.TSMode > Arrival {
			return corrupt(key, "entry %d: unknown timestamping mode %d", i, en.TSMode)
		}
		if en.MinTS > en.MaxTS || en.Floor > en.MinTS {
			return corrupt(key, "entry %d: timestamps out of order", i)
		}
		if err := en.checkRange(key, i); err != nil {
			return err
		}
		next, have = en.EndSeq(), true
	}
	return nil
}
