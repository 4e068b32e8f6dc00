package stream

import (
	"errors"
	"fmt"
	"path"

	"github.com/sluice-dev/sluice/objectstore"
)

// The default stream's keys (Default).
const (
	DefaultManifestKey = "ingest/manifest"
	DefaultDataPrefix  = "ingest"
)

// ErrInvalid is matched by every error New returns.
var ErrInvalid = errors.New("stream: invalid stream")

// Stream is where one stream lives in a store. It is comparable (a map key) and immutable;
// the zero Stream names no stream (see the package doc).
type Stream struct {
	basin, name string
	manifest    string
	data        string
}

// Default returns the default stream: manifest DefaultManifestKey, data prefix
// DefaultDataPrefix.
func Default() Stream {
	return Stream{manifest: DefaultManifestKey, data: DefaultDataPrefix}
}

// New returns the stream whose manifest is at manifestKey and whose batch objects are under
// dataPrefix + "/". It reports every problem at once, each matching ErrInvalid.
func New(manifestKey, dataPrefix string) (Stream, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	if err := objectstore.ValidateKey(manifestKey); err != nil {
		bad("manifest key: %v", err)
	}
	if err := objectstore.ValidateKey(dataPrefix + "/x"); dataPrefix == "" || err != nil {
		bad("data prefix %q is not a valid key prefix", dataPrefix)
	}
	if dataPrefix == DefaultDataPrefix && manifestKey != DefaultManifestKey {
		bad("data prefix is the default %q while the manifest key is %q: give each stream a data prefix of its own (e.g. %q), since garbage collection deletes what a stream's manifest does not reference under its prefix", dataPrefix, manifestKey, path.Join(path.Dir(manifestKey), "data"))
	}
	if err := errors.Join(errs...); err != nil {
		return Stream{}, err
	}
	return Stream{manifest: manifestKey, data: dataPrefix}, nil
}

// MustNew is New for keys known to be valid (tests, constants); it panics on an error.
func MustNew(manifestKey, dataPrefix string) Stream {
	s, err := New(manifestKey, dataPrefix)
	if err != nil {
		panic(err)
	}
	return s
}

// IsZero reports whether s is the zero Stream, which names no stream.
func (s Stream) IsZero() bool { return s == Stream{} }

// ManifestKey is the key of the stream's manifest.
func (s Stream) ManifestKey() string { return s.manifest }

// DataPrefix is the prefix of the stream's batch objects, without the trailing "/" (their
// keys are DataPrefix() + "/" + an id; see BatchKey).
func (s Stream) DataPrefix() string { return s.data }

// SegmentPrefix is the key prefix, with its trailing "/", of the stream's sealed segments.
func (s Stream) SegmentPrefix() string { return SegmentPrefix(s.manifest) }

// Name is the stream's name when it was laid out by name (Locate), "" otherwise.
func (s Stream) Name() string { return s.name }

// Basin is the stream's basin when it was laid out by name in one (Locate), "" otherwise.
func (s Stream) Basin() string { return s.basin }

// String names the stream for logs: basin/name when laid out by name, its manifest key
// otherwise.
func (s Stream) String() string {
	switch {
	case s.name != "" && s.basin != "":
		return s.basin + "/" + s.name
	case s.name != "":
		return s.name
	}
	return s.manifest
}
