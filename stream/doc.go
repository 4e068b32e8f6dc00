// Package stream names where one stream lives in an object store: one value, Stream, that
// every package which touches a stream (producer, consumer, gc, catalog, engine) takes,
// instead of a manifest path and a data prefix copied field by field.
//
// A Stream holds the key of its manifest, the prefix of its batch objects, the prefix of its
// sealed segments (derived from the manifest key), and, for a stream laid out by name, its
// name and basin. Its fields are unexported: a Stream comes from a constructor that checked
// it, and the zero Stream (IsZero) names nothing and is refused by every package that takes
// one.
//
// Constructors:
//
//   - Default: the stream of S2's documentation and opendata's Buffer, manifest
//     "ingest/manifest" and data prefix "ingest".
//   - New(manifestKey, dataPrefix): any other pair. Both must be valid keys; a data prefix
//     other streams use loses their records to the collector (package gc deletes what a
//     stream's manifest does not reference under its data prefix), so New refuses the easy
//     way to get there, a manifest other than the default beside the default data prefix.
//   - Locate(basin, name): the multi-stream layout the daemon, the CLI and package catalog
//     share.
//
// # Layout
//
// Every key below is relative to the store's own prefix:
//
//	streams/<enc(stream)>/manifest          streams outside any basin (the CLI's default)
//	streams/<enc(stream)>/data/...          their batch objects
//	streams/<enc(stream)>/manifest.seg/...  their sealed segments
//	basins/<basin>/streams/<enc(stream)>/manifest
//	basins/<basin>/streams/<enc(stream)>/data/...
//
// enc is an injective escaping of the name's bytes: ASCII letters, digits, '_' and '-' stand
// for themselves and every other byte becomes '%' and two upper-case hex digits. An encoded
// name never holds '/', '.', '~', or an empty string, so no name escapes its place ("..") and
// no two names share a key prefix ("a" and "a/data" encode to "a" and "a%2Fdata", different
// path segments).
//
// An encoded name longer than MaxSegmentLen bytes (a 512-byte name may take 1536) is cut into
// path segments of at most MaxSegmentLen bytes, never inside an escape, each but the last
// ending in '~': file systems refuse longer path segments. The cut stays injective and
// prefix-free: a segment ending in '~' is never the last one, and a last one never ends in
// '~'.
//
// Stream names are 1 to 512 bytes, as in S2's documentation; any bytes are allowed. Basin
// names follow S2: 8 to 48 characters of lower-case letters, digits and '-', neither first
// nor last '-'.
package stream
