package batchfmt

import (
	"errors"
	"fmt"
)

// Object layout constants (see the package doc for the diagram).
const (
	// Magic opens every batch object.
	Magic = "SLCB"
	// Version is the format version this package writes and reads.
	Version = 1
	// HeaderSize is the size of the fixed object header.
	HeaderSize = 24
	// TrailerSize is the size of the CRC32C trailer.
	TrailerSize = 4
	// MaxObjectBytes bounds the payload of one object, before and after compression. Decode
	// refuses a larger declared size, so a hostile object cannot make it allocate more.
	MaxObjectBytes = 1 << 30
)

// Bits of the record magic byte.
const (
	recTypeMask     = 0x07
	recTypeCommand  = 1
	recTypeEnvelope = 2
	recVarlenShift  = 3
	recVarlenMask   = 0x18
	recHasTimestamp = 0x20
	recReserved     = 0xC0
)

// Bits of the append flags byte.
const (
	appHasMatchSeqNum  = 0x01
	appHasFencingToken = 0x02
	appReserved        = 0xFC
)

// appendHeaderSize is the fixed part of an append header: flags, count, metered, length.
const appendHeaderSize = 1 + 2 + 4 + 4

// lenEscape in a 2-byte length or count field means a 4-byte value follows.
const lenEscape = 0xFFFF

// Compression is the compression applied to an object's payload.
type Compression uint8

const (
	// CompressionNone stores the payload as is.
	CompressionNone Compression = 0
	// CompressionZstd stores the payload as one zstd frame.
	CompressionZstd Compression = 1
)

// String returns "none", "zstd", or "compression(N)" for an unknown value.
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// Valid reports whether c is a compression this package knows.
func (c Compression) Valid() bool { return c == CompressionNone || c == CompressionZstd }

// ErrUnknownCompression is matched by ParseCompression's error.
var ErrUnknownCompression = errors.New("batchfmt: unknown compression")

// ParseCompression parses "none" or "zstd".
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "none":
		return CompressionNone, nil
	case "zstd":
		return CompressionZstd, nil
	}
	return 0, fmt.Errorf("%w %q (want \"none\" or \"zstd\")", ErrUnknownCompression, s)
}

// MarshalText implements encoding.TextMarshaler.
func (c Compression) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, fmt.Errorf("%w %d", ErrUnknownCompression, uint8(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Compression) UnmarshalText(b []byte) error {
	v, err := ParseCompression(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ErrCorrupt is matched (errors.Is) by every error Decode and Iterator report about the
// bytes of an object. It is a class of its own: it never matches ErrInvalid.
var ErrCorrupt = errors.New("batchfmt: corrupt batch object")

// CorruptError says where and why an object failed to decode. Offset counts bytes from the
// start of the object; inside a compressed payload it counts as if the payload were stored
// uncompressed right after the header.
type CorruptError struct {
	Offset int
	Reason string
	Err    error // an underlying cause, such as the zstd decoder's error; may be nil
}

func (e *CorruptError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("batchfmt: corrupt batch object at offset %d: %s: %v", e.Offset, e.Reason, e.Err)
	}
	return fmt.Sprintf("batchfmt: corrupt batch object at offset %d: %s", e.Offset, e.Reason)
}
func (e *CorruptError) Unwrap() error        { return e.Err }
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

//go:noinline
func corrupt(off int, format string, args ...any) *CorruptError {
	return &CorruptError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}
