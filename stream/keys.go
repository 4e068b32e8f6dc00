package stream

// SegmentPrefix is the key prefix, with its trailing "/", of the sealed segments of the
// manifest at manifestKey.
func SegmentPrefix(manifestKey string) string { return manifestKey + ".seg/" }
