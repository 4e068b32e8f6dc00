package stream

import (
	"errors"
	"fmt"
	"strings"
)

// Name limits.
const (
	MaxStreamNameLen = 512
	// MaxSegmentLen bounds one path segment of an encoded stream name (see the package doc).
	MaxSegmentLen   = 200
	MinBasinNameLen = 8
	MaxBasinNameLen = 48
)

// ErrInvalidName is matched by every name validation error.
var ErrInvalidName = errors.New("stream: invalid name")

// NameError says why a name was refused.
type NameError struct {
	Kind   string // "stream" or "basin"
	Name   string
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("stream: invalid %s name %q: %s", e.Kind, e.Name, e.Reason)
}

// Is matches ErrInvalidName.
func (e *NameError) Is(target error) bool { return target == ErrInvalidName }

// ValidateStreamName reports why name cannot name a stream.
func ValidateStreamName(name string) error {
	switch {
	case len(name) == 0:
		return &NameError{Kind: "stream", Name: name, Reason: "must not be empty"}
	case len(name) > MaxStreamNameLen:
		return &NameError{Kind: "stream", Name: name[:32] + "…", Reason: fmt.Sprintf("is %d bytes, longer than %d", len(name), MaxStreamNameLen)}
	}
	return nil
}

// ValidateBasinName reports why name cannot name a basin.
func ValidateBasinName(name string) error {
	if len(name) < MinBasinNameLen || len(name) > MaxBasinNameLen {
		return &NameError{Kind: "basin", Name: name, Reason: fmt.Sprintf("must be %d to %d characters, is %d", MinBasinNameLen, MaxBasinNameLen, len(name))}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return &NameError{Kind: "basin", Name: name, Reason: fmt.Sprintf("character %q at %d is not a lower-case letter, digit or '-'", c, i)}
		}
	}
	if name[0] == '-' || name[len(name)-1] == '-' {
		return &NameError{Kind: "basin", Name: name, Reason: "must not start or end with '-'"}
	}
	return nil
}

// EncodeName escapes a stream name into one path segment (see the package doc).
func EncodeName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		if unescaped(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func unescaped(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// DecodeName inverts EncodeName. It refuses any string EncodeName cannot produce.
func DecodeName(enc string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		if unescaped(c) {
			b.WriteByte(c)
			continue
		}
		if c != '%' || i+2 >= len(enc) {
			return "", fmt.Errorf("%w: %q is not an encoded stream name", ErrInvalidName, enc)
		}
		hi, lo := unhex(enc[i+1]), unhex(enc[i+2])
		if hi < 0 || lo < 0 || unescaped(byte(hi<<4|lo)) {
			return "", fmt.Errorf("%w: %q is not an encoded stream name", ErrInvalidName, enc)
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: empty encoded stream name", ErrInvalidName)
	}
	return b.String(), nil
}

// streamDir is the encoded name cut into path segments (see the package doc).
func streamDir(name string) string {
	enc := EncodeName(name)
	if len(enc) <= MaxSegmentLen {
		return enc
	}
	var b strings.Builder
	for len(enc) > MaxSegmentLen {
		cut := MaxSegmentLen - 1 // room for the '~'
		// Never cut inside an escape: back up to its '%' when one of the last two bytes is it.
		if i := strings.LastIndexByte(enc[cut-2:cut], '%'); i >= 0 {
			cut = cut - 2 + i
		}
		b.WriteString(enc[:cut])
		b.WriteString("~/")
		enc = enc[cut:]
	}
	b.WriteString(enc)
	return b.String()
}

// DecodeDir inverts the stream directory of a name (the encoded name, cut into segments).
func DecodeDir(dir string) (string, error) {
	segs := strings.Split(dir, "/")
	var enc strings.Builder
	for i, seg := range segs {
		last := i == len(segs)-1
		body, cont := strings.CutSuffix(seg, "~")
		if cont == last || body == "" || len(seg) > MaxSegmentLen {
			return "", fmt.Errorf("%w: %q is not an encoded stream directory", ErrInvalidName, dir)
		}
		enc.WriteString(body)
	}
	name, err := DecodeName(enc.String())
	if err != nil {
		return "", err
	}
	if streamDir(name) != dir {
		return "", fmt.Errorf("%w: %q is not the canonical directory of its name", ErrInvalidName, dir)
	}
	return name, nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// Root is the key prefix, with its trailing "/", of the stream directories of a basin ("" for
// the root namespace; see the package doc).
func Root(basin string) string {
	if basin == "" {
		return "streams/"
	}
	return "basins/" + basin + "/streams/"
}

// Locate returns where the stream name of basin lives in the layout of the package doc.
// basin "" is the root namespace. Errors match ErrInvalidName.
func Locate(basin, name string) (Stream, error) {
	var errs []error
	if basin != "" {
		errs = append(errs, ValidateBasinName(basin))
	}
	errs = append(errs, ValidateStreamName(name))
	if err := errors.Join(errs...); err != nil {
		return Stream{}, err
	}
	dir := Root(basin) + streamDir(name)
	return Stream{basin: basin, name: name, manifest: dir + "/" + ManifestName, data: dir + "/" + DataName}, nil
}
