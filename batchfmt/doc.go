// Package batchfmt holds sluice's record model (S2's records: envelope and command
// records, headers, metered size, append limits and their validation), client-side batching
// of records into appends (Batcher, BatchingConfig), and the format of batch objects: the
// immutable objects in the store that each hold many appends, in order.
//
// # Contract
//
// An Encoder turns appends into one object; Decode checks an object and gives an Object, whose
// Iterator walks the records in order without materialising them, skipping appends on
// request (the ones the committer rejected). Decode checks the object's header, its CRC32C
// and every append header; the Iterator checks each record frame as it reads it, in the same
// pass that returns it, and each append's totals before returning its last record, so
// nothing unchecked is ever returned (Object.Validate checks all records at once for a caller
// that wants all or nothing). Neither panics on any input: every length is checked against
// the bytes that remain before it is used, and every failure is a *CorruptError matching
// ErrCorrupt, a class distinct from ErrInvalid (bad input from a client). Nothing is skipped
// silently.
//
// # Object layout (format version 1; all integers big-endian)
//
//	offset
//	     0 +--------+--------+--------+--------+
//	       |  'S'   |  'L'   |  'C'   |  'B'   |  magic
//	     4 +--------+--------+--------+--------+
//	       |version |compr.  |  reserved (0)   |  version 1; compression 0=none 1=zstd
//	     8 +--------+--------+--------+--------+
//	       |         append count (u32)        |
//	    12 +-----------------------------------+
//	       |         record count (u32)        |
//	    16 +-----------------------------------+
//	       |  payload size, uncompressed (u32) |  <= MaxObjectBytes
//	    20 +-----------------------------------+
//	       |  stored payload size (u32)        |  = object size - 28
//	    24 +-----------------------------------+
//	       |  payload, stored (raw, or one     |
//	       |  zstd frame of the raw payload)   |
//	       +-----------------------------------+
//	       |  CRC32C (Castagnoli) over every   |
//	       |  byte before it (u32)             |
//	       +-----------------------------------+
//
// The raw payload is the appends, one after the other:
//
//	append := flags u8                bit 0: match_seq_num present, bit 1: fencing token present
//	          record count u16        1..1000
//	          metered bytes u32       sum of the records' metered sizes, <= 1 MiB
//	          records length u32      bytes of the record frames below
//	          [match_seq_num u64]     if flag bit 0
//	          [token length u8]       if flag bit 1, 0..48
//	          [token bytes]
//	          record frame × count
//
// A record frame follows S2's record wire layout (magic byte with record type and
// metered-size length, metered size, 2-byte header count, 2-byte length-prefixed names and
// values, body):
//
//	+-------+---------------+-------------+----------+---------------------+------+
//	| magic | metered size  | [timestamp] | hdr count| headers             | body |
//	| 1 B   | 1..3 B        | 8 B         | 2 B (*)  | (len 2 B (*), name, | rest |
//	|       |               | if bit 5    |          |  len 2 B (*), value)|      |
//	+-------+---------------+-------------+----------+---------------------+------+
//
//	magic bits 0-2: record type (1 = command, 2 = envelope)
//	      bits 3-4: metered size length - 1 (0 = 1 byte, 1 = 2 bytes, 2 = 3 bytes)
//	      bit  5  : a client timestamp (u64 milliseconds) follows the metered size
//	      bits 6-7: zero
//
// The body has no length of its own: it is what the metered size leaves,
// metered - 8 - 2·headers - Σ(name + value), as S2's documentation defines it.
//
// Deviations from S2's layout, and why:
//
//   - (*) Lengths and the header count are 2 bytes, as in S2's layout, but an append may be
//     1 MiB metered, so one header name or value, or the number of headers, can exceed
//     65535. Rather than add a limit of our own that S2's API does not state, the value
//     0xFFFF is an escape: a 4-byte length follows. Escapes are canonical (used only for
//     values >= 0xFFFF, checked by the decoder), so records below the bound are encoded
//     exactly as S2's documentation draws them and each record has one encoding.
//   - Bit 5 of the magic byte and the 8-byte timestamp: S2's record layout has no
//     timestamp (S2 keeps it in the record's position), but a batch object must carry the
//     client's optional timestamp until the committer assigns positions.
//   - A command record is framed like an envelope (one header with an empty name whose value
//     is the command, the payload as body), with record type 1. Its metered size is the
//     same either way, so the decoder checks type against headers for free.
//
// Fixed-width append headers and a trailing CRC were chosen over varints for simplicity and
// decode speed: the overhead is 11-60 bytes per append and 28 per object.
//
// # Decoding order
//
// Decode checks the length, magic, version, compression, reserved bytes, stored size and the
// declared payload size (bounded by MaxObjectBytes), then the CRC32C of all stored bytes,
// and only then decompresses (into a buffer of exactly the declared size: a zstd frame that
// inflates beyond it fails) and walks the append headers. The Iterator then checks record
// frames as it returns them: since the CRC32C has passed, only an object written wrongly can
// fail there, and it fails before the bad record is returned.
//
// # Encoding and decoding
//
// Encoder.Add validates each append as AppendInput.Validate does, sizing every record, then
// reserves the append's room in one buffer and writes the append header and the record
// frames into it by offset (no allocation per record); nothing of a refused append is kept.
// Encoder.Grow reserves an object's expected size up front, so that the buffer does not grow
// (and copy itself) while it fills. Finish writes the header, compresses if configured and
// appends the CRC32C (hash/crc32's Castagnoli table, which uses the CPU's CRC32 instruction
// where there is one). Decode returns an Object that aliases its input when stored
// uncompressed; a Decoder reuses its decompression buffer across objects. An ObjectBuffer
// reads an object and decodes it as Decode does, checksumming the bytes as they arrive,
// while they are still in the CPU's caches, rather than in a second pass over the object. zstd uses one
// process-wide encoder and decoder (see zstd.go), at level SpeedFastest.
//
// Limits: a record's metered size fits S2's 3-byte metered-size field (an append is
// at most 1 MiB anyway); an object's payload is at most MaxObjectBytes (1 GiB), which also
// bounds what Decode will allocate for a compressed object.
//
// # Benchmarks
//
// BenchmarkEncode and BenchmarkDecode run each operation beside its baseline on objects of
// about 1 MiB, for bodies of 100 B, 1 KiB and 64 KiB: a plain copy of the same bytes when
// uncompressed, zstd's EncodeAll or DecodeAll of the same payload with zstd. BenchmarkRatio
// interleaves operation and baseline and reports their ratio; BenchmarkEncodeFresh encodes
// input the last runs did not read; BenchmarkEncodeBatch encodes a producer-sized object
// (32 MiB) into a new, a grown and a reused encoder; BenchmarkIterate and BenchmarkCRC32C
// time the parts.
// Encoding runs on two layouts of the same records: heap (each body, header slice, name and
// value an allocation of its own) and wire (slices of one request buffer, the daemon's path).
//
// # Test vectors
//
// testdata/*.hex pin the bytes of known objects; a change of format fails TestVectors.
// Regenerate deliberately with: go test ./batchfmt -run TestVectors -update
// (and bump Version when old objects would no longer decode the same).
package batchfmt
