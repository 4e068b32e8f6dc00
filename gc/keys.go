package gc

import (
	"regexp"
	"strings"

	"github.com/sluice-dev/sluice/manifest"
)

// ProbeKey is the object a pass writes to read the store's clock: under the data prefix,
// named so that it is never taken for a batch object.
func ProbeKey(dataPrefix string) string { return dataPrefix + "/gc-probe" }

var (
	batchName   = regexp.MustCompile(`^[0-9a-f]{28,}$`)
	segmentName = regexp.MustCompile(`^[0-9a-f]{8}-[0-9]{20}-[0-9]{1,3}-[0-9a-f]{16}$`)
)

// IsBatchKey reports whether key names a batch object of the stream: the producer writes
// them as dataPrefix + "/" + 12 hex digits of Unix ms + 16 random hex digits. The collector
// deletes nothing else under the data prefix.
func IsBatchKey(dataPrefix, key string) bool {
	name, ok := strings.CutPrefix(key, dataPrefix+"/")
	return ok && batchName.MatchString(name)
}

// IsSegmentKey reports whether key names a segment object of the manifest at manifestPath
// (see manifest.SegmentPrefix).
func IsSegmentKey(manifestPath, key string) bool {
	name, ok := strings.CutPrefix(key, manifest.SegmentPrefix(manifestPath))
	return ok && segmentName.MatchString(name)
}

// segKey is a key beneath a segment: an entry's batch object, with the entry's end seq_num,
// or a child segment (end math.MaxUint64: always referenced while its parent is).
type segKey struct {
	key string
	end uint64
}

// IsSegmentKeyAny reports whether key looks like a segment object of any manifest.
func IsSegmentKeyAny(key string) bool {
	i := strings.LastIndex(key, ".seg/")
	return i >= 0 && segmentName.MatchString(key[i+len(".seg/"):])
}
