// Package journal holds the committer's journal objects: their keys, their binary format, and
// the store-level steps every writer and reader of a journal shares (reading a journal in
// order, resolving a window write whose outcome is unknown, and fencing a journal).
//
// A journal belongs to one committer incarnation, named by a random 64-bit id J. Its objects
// are written create-only and never change, one per commit window, numbered from 0:
//
//	journals/<J as 16 hex digits>/<n as 20 decimal digits>
//
// An object is a window (the commits of every stream the committer wrote in one window) or a
// fence (written by whoever closes the journal, at its first free number, as SlateDB fences a
// zombie writer's WAL by claiming its next id). A journal's history is its objects from a
// given number up to the first missing number or the first fence: create-only writes make
// that prefix grow only, and a fence ends it for good. docs/journal.md has the protocol
// (commit windows, checkpoints into the manifest, takeover) and why each invariant holds.
//
// # Format
//
// All integers in the header are little-endian; the index is varint-encoded (unsigned
// varints; strings are a varint length then the bytes). The header and index come first, so
// a reader gets both with one ranged read of the object's first bytes (HeadSize, then
// Header.IndexLen more if the index is longer than that read), then reads its stream's
// section by its byte range.
//
//	0       4   5    6      8              16             24                 40
//	+-------+---+----+------+--------------+--------------+------------------+
//	| "SLJ1"| v | k  | 0  0 | journal id   | number       | nonce (16 bytes) |
//	+-------+---+----+------+--------------+--------------+------------------+
//	40              48           52               60            64
//	+---------------+------------+----------------+-------------+
//	| written at ms | index len  | 0 (8 bytes)    | CRC32C      |
//	+---------------+------------+----------------+-------------+
//	v: format version (1); k: kind (1 window, 2 fence). The CRC (Castagnoli) covers bytes
//	0..60 and the index.
//
//	index (window only): n_sections { manifest_key generation[16] offset length
//	                                   first_seq next_seq crc32c }*
//	sections: the bytes each index row names (offset from the start of the object),
//	          each checked by its own CRC32C when it is read.
//
// A section's bytes are the stream's commit delta and records for that window, in the
// encoding of the package that writes them; this package only frames and checks them. A
// fence has an empty index and no sections.
//
// # Cache
//
// Cache is a store wrapper that keeps the journal objects written through it in memory (the
// newest first, up to a bound), so that readers in the committer's own process fold new
// windows and read carried records without store requests. Journal objects never change,
// so a cached copy is never stale.
//
// # Errors
//
// Any malformed object is a *CorruptError (errors.Is ErrCorrupt): a reader must not skip
// it, and retrying will not help. A newer version byte is ErrUnsupportedVersion.
package journal
