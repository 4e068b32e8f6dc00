// Package file is the file store: an objectstore.Store that keeps objects as files under a
// root directory. Several processes on one machine may share the directory; all of them must
// use this package (or follow the same protocol).
//
// Layout. The object with key "a/b/c" is the file ROOT/a/b/c. The directory ROOT/.sluice-tmp
// holds temporary files and lock files and is never listed; the file store rejects keys whose
// first segment is ".sluice-tmp" with objectstore.ErrInvalidKey. Because a name is either a
// file or a directory, the file store cannot hold both "a" and "a/b": the second put fails with an error
// that matches ErrKeyConflict (no other sentinel; nothing is written). Directories that hold
// no file where an object goes (a failed put or a crash can leave them) hold no key: the put
// removes them.
//
// Each object file starts with a 24-byte header that carries the object's version:
//
//	offset 0        7    8                        24
//	       +--------+----+------------------------+------------------------+
//	       |"SLUICEO"|0x01| version: 16 random bytes| object bytes (size N)  |
//	       +--------+----+------------------------+------------------------+
//	        magic   format
//
// The version string is the 32-digit lower-case hex of the 16 random bytes (crypto/rand), so two
// writes in the same nanosecond get different versions, and a version is never reused, even after
// delete and re-create. The version lives in the same file as the bytes it names, so one rename
// publishes both at once: readers take no locks, and a crash cannot leave a version that
// disagrees with its content (the failure modes of a sidecar file or of an mtime-derived
// version). A file under ROOT without this header is reported as objectstore.ErrCorrupt.
//
// Writes. A put writes the header and the body to a temporary file in ROOT/.sluice-tmp, fsyncs
// it, then, holding an exclusive flock(2) on the key's lock file (one of 64 lock files chosen by
// a hash of the key, shared by every process), applies its condition and publishes the file:
// create-only with link(2), which fails if the name exists; If-Match by reading the current
// header, comparing versions, and rename(2); unconditional with rename(2). It then fsyncs the
// directory (and the parents of directories it created). Delete unlinks under the same lock and
// fsyncs the directory, then removes directories left empty. All writes to a key are therefore
// serialized across processes, and a reader sees the old object or the new one, never a part.
//
// Listing walks the tree and returns keys in byte order, as S3 does (a directory "a" sorts as
// "a/", so "a-b" comes before "a/b" and "a0" after it), reading each listed file's header for
// its version. ModTime is the file's modification time (the store's own clock, not a version).
// Temporary files older than an hour, left by crashed processes, are removed when a Store
// is opened.
//
// The store needs flock(2) and link(2): on systems other than Unix, New fails.
package file
