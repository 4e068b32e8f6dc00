package stream

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The object keys of a stream, each made and parsed here, side by side (as pebble keeps
// MakeFilename and ParseFilename), so that what the producer and the manifest write and what
// the collector deletes cannot drift apart. Every parser accepts exactly the keys its maker
// makes and refuses the rest: the collector deletes nothing it does not recognise.
//
//	<manifest key>                                        the manifest (ManifestKey)
//	<data prefix>/<ms:12+ hex><random:16 hex>              a batch object (BatchKey)
//	<manifest key>.seg/<gen:8 hex>-<seq:20 dec>-<level>-<random:16 hex>
//	                                                      a sealed segment (SegmentKey)
//	<data prefix>/gc-probe                                the collector's clock probe (ProbeKey)
//
// In the layout of Locate the manifest key is <stream directory>/ManifestName and the data
// prefix <stream directory>/DataName.

// Names of a located stream's keys below its directory (see Locate).
const (
	// ManifestName is the last path segment of a located stream's manifest key.
	ManifestName = "manifest"
	// DataName is the last path segment of a located stream's data prefix.
	DataName = "data"
	// segmentSuffix follows the manifest key in the segment prefix.
	segmentSuffix = ".seg/"
	// probeName follows the data prefix and "/" in the probe key.
	probeName = "gc-probe"
)

// KeyKind is what a key is to a stream (Stream.Classify).
type KeyKind uint8

const (
	// KeyForeign: none of the stream's own keys (the collector never touches it).
	KeyForeign KeyKind = iota
	// KeyManifest: the stream's manifest.
	KeyManifest
	// KeyBatch: a batch object (BatchKey).
	KeyBatch
	// KeySegment: a sealed segment (SegmentKey).
	KeySegment
	// KeyProbe: the collector's clock probe (ProbeKey).
	KeyProbe
)

func (k KeyKind) String() string {
	switch k {
	case KeyForeign:
		return "foreign"
	case KeyManifest:
		return "manifest"
	case KeyBatch:
		return "batch"
	case KeySegment:
		return "segment"
	case KeyProbe:
		return "probe"
	}
	return fmt.Sprintf("KeyKind(%d)", uint8(k))
}

// Classify says which of the stream's keys key is.
func (s Stream) Classify(key string) KeyKind {
	switch {
	case key == s.manifest:
		return KeyManifest
	case key == s.ProbeKey():
		return KeyProbe
	}
	if _, ok := s.ParseBatchKey(key); ok {
		return KeyBatch
	}
	if _, ok := ParseSegmentKey(s.manifest, key); ok {
		return KeySegment
	}
	return KeyForeign
}

// ProbeKey is the object the collector writes to read the store's clock: under the data
// prefix, named so that it is never taken for a batch object.
func (s Stream) ProbeKey() string { return s.data + "/" + probeName }

// BatchName is what a batch object's key holds besides the data prefix.
type BatchName struct {
	// UnixMilli is the producer's clock when the upload began; at least 0.
	UnixMilli int64
	// Random tells apart the uploads of one millisecond (and every attempt of one upload).
	Random uint64
}

const (
	batchMillisDigits = 12 // at least; more once Unix ms reach 2^48 (year 10889)
	randomDigits      = 16
)

// BatchKey is the key of a batch object of the stream: the data prefix, "/", the Unix
// milliseconds in at least 12 lower-case hex digits (a negative time counts as 0) and the
// random number in 16. Keys of one prefix sort by time.
func (s Stream) BatchKey(n BatchName) string {
	return fmt.Sprintf("%s/%012x%016x", s.data, max(n.UnixMilli, 0), n.Random)
}

// ParseBatchKey inverts BatchKey: ok only for a key BatchKey makes for this stream.
func (s Stream) ParseBatchKey(key string) (n BatchName, ok bool) {
	name, ok := strings.CutPrefix(key, s.data+"/")
	if !ok || len(name) < batchMillisDigits+randomDigits || len(name) > 16+randomDigits {
		return BatchName{}, false
	}
	ms, rnd := name[:len(name)-randomDigits], name[len(name)-randomDigits:]
	if len(ms) > batchMillisDigits && ms[0] == '0' {
		return BatchName{}, false // BatchKey pads to 12 digits only
	}
	msv, ok1 := parseHex(ms)
	rv, ok2 := parseHex(rnd)
	if !ok1 || !ok2 || msv > math.MaxInt64 {
		return BatchName{}, false
	}
	return BatchName{UnixMilli: int64(msv), Random: rv}, true
}

// SegmentPrefix is the key prefix, with its trailing "/", of the sealed segments of the
// manifest at manifestKey.
func SegmentPrefix(manifestKey string) string { return manifestKey + segmentSuffix }

// SegmentName is what a segment object's key holds besides the segment prefix.
type SegmentName struct {
	// Generation is the first 4 bytes of the stream's generation id.
	Generation [4]byte
	// FirstSeq is the first seq_num the segment covers.
	FirstSeq uint64
	// Level is the segment's level (0: entries; above: references to segments).
	Level uint8
	// Random tells apart segments written for writes that lost their conditional put.
	Random uint64
}

// SegmentKey is the key of a sealed segment of the manifest at manifestKey: the segment
// prefix, then the generation in 8 lower-case hex digits, "-", the first seq_num in 20
// decimal digits, "-", the level in decimal, "-", and the random number in 16 hex digits.
func SegmentKey(manifestKey string, n SegmentName) string {
	return fmt.Sprintf("%s%x-%020d-%d-%016x", SegmentPrefix(manifestKey), n.Generation[:], n.FirstSeq, n.Level, n.Random)
}

// ParseSegmentKey inverts SegmentKey: ok only for a key SegmentKey makes for manifestKey.
func ParseSegmentKey(manifestKey, key string) (n SegmentName, ok bool) {
	name, ok := strings.CutPrefix(key, SegmentPrefix(manifestKey))
	if !ok {
		return SegmentName{}, false
	}
	parts := strings.Split(name, "-")
	if len(parts) != 4 || len(parts[0]) != 8 || len(parts[1]) != 20 || len(parts[2]) < 1 || len(parts[2]) > 3 || len(parts[3]) != randomDigits {
		return SegmentName{}, false
	}
	gen, ok1 := parseHex(parts[0])
	seq, ok2 := parseDec(parts[1])
	level, ok3 := parseDec(parts[2])
	rnd, ok4 := parseHex(parts[3])
	if !ok1 || !ok2 || !ok3 || !ok4 || level > math.MaxUint8 || (len(parts[2]) > 1 && parts[2][0] == '0') {
		return SegmentName{}, false
	}
	n = SegmentName{FirstSeq: seq, Level: uint8(level), Random: rnd}
	n.Generation = [4]byte{byte(gen >> 24), byte(gen >> 16), byte(gen >> 8), byte(gen)}
	return n, true
}

// SegmentKey is SegmentKey(s.ManifestKey(), n).
func (s Stream) SegmentKey(n SegmentName) string { return SegmentKey(s.manifest, n) }

// ParseSegmentKey is ParseSegmentKey(s.ManifestKey(), key).
func (s Stream) ParseSegmentKey(key string) (SegmentName, bool) {
	return ParseSegmentKey(s.manifest, key)
}

// parseHex parses 1 to 16 lower-case hex digits.
func parseHex(s string) (uint64, bool) {
	if s == "" || len(s) > 16 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}

// parseDec parses decimal digits that fit in a uint64.
func parseDec(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
