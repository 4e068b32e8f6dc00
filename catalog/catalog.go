// Package catalog maps stream and basin names to places in an object store, and lists them.
//
// One store holds many streams. A stream is a pair (manifest path, data prefix) as far as the
// manifest, producer and consumer packages are concerned; this package chooses the pair for a
// name, so that the CLI, the daemon and library users agree on it.
//
// Layout (every key below is relative to the store's own prefix):
//
//	streams/<enc(stream)>/manifest          streams outside any basin (the CLI's default)
//	streams/<enc(stream)>/data/...          their batch and segment objects
//	basins/<basin>/basin                    a basin's marker and settings (JSON)
//	basins/<basin>/streams/<enc(stream)>/manifest
//	basins/<basin>/streams/<enc(stream)>/data/...
//
// enc is an injective escaping of the name's bytes: ASCII letters, digits, '_' and '-' stand for
// themselves and every other byte becomes '%' and two upper-case hex digits. An encoded name never
// holds '/', '.', '~', or an empty string, so no name escapes its place ("..") and no two names
// share a key prefix ("a" and "a/data" encode to "a" and "a%2Fdata", different path segments).
//
// An encoded name longer than MaxSegmentLen bytes (a 512-byte name may take 1536) is cut into
// path segments of at most MaxSegmentLen bytes, never inside an escape, each but the last ending
// in '~': file systems refuse longer path segments. The cut stays injective and prefix-free: a
// segment ending in '~' is never the last one, and a last one never ends in '~'.
//
// Stream names are 1 to 512 bytes, as in the streams seed; any bytes are allowed. Basin names
// follow S2: 8 to 48 characters of lower-case letters, digits and '-', neither first nor last '-'.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/objectstore"
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
var ErrInvalidName = errors.New("catalog: invalid name")

// NameError says why a name was refused.
type NameError struct {
	Kind   string // "stream" or "basin"
	Name   string
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("catalog: invalid %s name %q: %s", e.Kind, e.Name, e.Reason)
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

// Stream locates one stream in a store.
type Stream struct {
	Basin        string // "" for the root namespace
	Name         string
	ManifestPath string
	DataPrefix   string
}

func streamsRoot(basin string) string {
	if basin == "" {
		return "streams/"
	}
	return "basins/" + basin + "/streams/"
}

// Locate returns where a stream lives. basin "" is the root namespace.
func Locate(basin, name string) (Stream, error) {
	var errs []error
	if basin != "" {
		errs = append(errs, ValidateBasinName(basin))
	}
	errs = append(errs, ValidateStreamName(name))
	if err := errors.Join(errs...); err != nil {
		return Stream{}, err
	}
	dir := streamsRoot(basin) + streamDir(name)
	return Stream{Basin: basin, Name: name, ManifestPath: dir + "/manifest", DataPrefix: dir + "/data"}, nil
}

// cutDir splits a key below a streams root into the stream's directory (its segments ending
// in '~' and the one after them) and the rest.
func cutDir(rest string) (dir, tail string, ok bool) {
	i := 0
	for {
		j := strings.IndexByte(rest[i:], '/')
		if j < 0 {
			return "", "", false
		}
		seg := rest[i : i+j]
		if !strings.HasSuffix(seg, "~") {
			return rest[:i+j], rest[i+j+1:], true
		}
		i += j + 1
	}
}

// BasinMarker is the key of a basin's marker object.
func BasinMarker(basin string) string { return "basins/" + basin + "/basin" }

// ListStreams lists streams of a basin ("" = root namespace) whose names start with prefix and
// sort after startAfter, up to limit (<= 0: 1000), in lexicographic order of their names, as
// S2 lists them. A stream is listed when its manifest exists and is not a tombstone (an empty
// object, see manifest.Handle.Create). more says whether further streams follow.
//
// Store keys hold escaped names (EncodeName) followed by "/", and their order is not the
// names' ("a/x" escapes to "a%2Fx", below "a-1"; "a/" sorts after "a-1/"), so a page walks
// every stream under the prefix and keeps the first limit names after startAfter: a listing
// of N streams in pages costs N/limit walks of them.
func ListStreams(ctx context.Context, s objectstore.Store, basin, prefix, startAfter string, limit int) (streams []Stream, more bool, err error) {
	limit = objectstore.PageLimit(limit)
	var names []string
	err = streamsUnder(ctx, s, basin, prefix, func(name string) {
		if name <= startAfter {
			return
		}
		names = append(names, name)
		if len(names) > 2*(limit+1) { // keep the smallest limit+1 only
			slices.Sort(names)
			names = names[:limit+1]
		}
	})
	if err != nil {
		return nil, false, err
	}
	slices.Sort(names)
	if len(names) > limit {
		names, more = names[:limit], true
	}
	for _, name := range names {
		st, _ := Locate(basin, name)
		streams = append(streams, st)
	}
	return streams, more, nil
}

// StreamNames returns the names of every stream of a basin whose names start with prefix,
// sorted, from one walk of the store: for listing them all, where paging ListStreams would
// walk them once per page.
func StreamNames(ctx context.Context, s objectstore.Store, basin, prefix string) ([]string, error) {
	var names []string
	if err := streamsUnder(ctx, s, basin, prefix, func(name string) { names = append(names, name) }); err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// streamsUnder calls fn with the name of every stream of a basin whose name starts with
// prefix (not tombstones), in the order of their store keys.
func streamsUnder(ctx context.Context, s objectstore.Store, basin, prefix string, fn func(name string)) error {
	root := streamsRoot(basin)
	// Narrow the listing to the prefix while its encoding surely sits in the first segment;
	// names are filtered by prefix below in any case.
	encPrefix := root
	if p := EncodeName(prefix); len(p) < MaxSegmentLen-3 {
		encPrefix = root + p
	}
	return walkDirs(ctx, s, root, encPrefix, root, func(enc, tail string, o objectstore.ObjectInfo) bool {
		if tail != "manifest" {
			return true
		}
		name, derr := DecodeDir(enc)
		if derr != nil || !strings.HasPrefix(name, prefix) || o.Size == 0 {
			return true // not ours, or a deleted stream's tombstone (see manifest.Handle.Create)
		}
		fn(name)
		return true
	})
}

// walkDirs lists the keys under listPrefix (within root, a streams root) after after, a page
// at a time, and calls fn with each stream directory's keys: its manifest, the first object
// of its run of data objects and the first of its sealed segments (the rest of each run is
// passed over in the page and not listed again), and any other key in it. Keys outside any
// stream directory are passed over. fn returns false to stop the walk.
func walkDirs(ctx context.Context, s objectstore.Store, root, listPrefix, after string, fn func(enc, tail string, o objectstore.ObjectInfo) bool) error {
	for {
		page, err := s.List(ctx, listPrefix, after, listPageSize)
		if err != nil {
			return err
		}
		for _, o := range page.Objects {
			key := o.Key
			if key <= after {
				continue // inside a run of data or segment objects skipped below
			}
			enc, tail, ok := cutDir(strings.TrimPrefix(key, root))
			if !ok {
				after = key
				continue
			}
			if !fn(enc, tail, o) {
				return nil
			}
			switch {
			case strings.HasPrefix(tail, "data/"):
				// Skip the stream's data objects: "data0" sorts after every "data/...".
				after = root + enc + "/data0"
			case strings.HasPrefix(tail, "manifest.seg/"):
				after = root + enc + "/manifest.seg0" // likewise its sealed segments
			default:
				after = key
			}
		}
		if page.NextStartAfter == "" {
			return nil
		}
		if page.NextStartAfter > after {
			after = page.NextStartAfter
		}
	}
}

// listPageSize is the page ListStreams asks for: streams whose objects are few cost a share
// of one request each; a stream with a long run of data objects costs about one request
// (the listing then jumps past the run).
const listPageSize = 100

// ListBasins lists basin names that start with prefix and sort after startAfter, up to limit
// (<= 0: 1000), in lexicographic order of their names, as S2 lists them. more says whether
// further basins follow.
//
// Markers are keyed "basins/<name>/basin", and that order is not the names': '-' sorts below
// '/', so "b-x" comes before "b" (a name is listed after the names it is a prefix of, when a
// '-' follows it in them). The walk, in key order, collects limit+1 names; a name it has not
// reached yet can only sort below the greatest of them, G, if it is a prefix of G followed
// by '-' there (see basinsBelow), and those few prefixes are looked up directly.
func ListBasins(ctx context.Context, s objectstore.Store, prefix, startAfter string, limit int) (basins []string, more bool, err error) {
	limit = objectstore.PageLimit(limit)
	// Every name after startAfter has a key after "basins/"+startAfter (its marker's key
	// holds startAfter and more, or differs first by a greater byte).
	after := "basins/" + startAfter
	var names []string
	for len(names) <= limit {
		page, err := s.List(ctx, "basins/"+prefix, after, 1)
		if err != nil {
			return nil, false, err
		}
		if len(page.Objects) == 0 {
			break
		}
		key := page.Objects[0].Key
		name, rest, _ := strings.Cut(strings.TrimPrefix(key, "basins/"), "/")
		switch {
		case rest == "basin":
			if name > startAfter && strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
			after = "basins/" + name + "0" // skip this basin's streams: '0' sorts after '/'
		case rest < "basin":
			after = key
		default:
			after = "basins/" + name + "0" // streams without a marker: not a basin
		}
	}
	if len(names) > limit {
		below, err := basinsBelow(ctx, s, slices.Max(names), prefix, startAfter)
		if err != nil {
			return nil, false, err
		}
		names = append(names, below...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > limit {
		names, more = names[:limit], true
	}
	return names, more, nil
}

// basinsBelow returns the basins whose markers sort after g's and whose names sort below g:
// the prefixes of g followed in g by a byte below '/' (for basin names, '-'), that start with
// prefix and sort after startAfter.
func basinsBelow(ctx context.Context, s objectstore.Store, g, prefix, startAfter string) ([]string, error) {
	var out []string
	for i := len(prefix); i < len(g); i++ {
		if g[i] >= '/' || i == 0 {
			continue
		}
		p := g[:i]
		if p <= startAfter {
			continue
		}
		_, err := s.Head(ctx, BasinMarker(p))
		if errors.Is(err, objectstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// AllStreams lists every stream of the store: the root namespace's, then each basin's.
func AllStreams(ctx context.Context, s objectstore.Store) ([]Stream, error) {
	var all []Stream
	listBasin := func(basin string) error {
		names, err := StreamNames(ctx, s, basin, "")
		if err != nil {
			return err
		}
		for _, name := range names {
			st, _ := Locate(basin, name)
			all = append(all, st)
		}
		return nil
	}
	if err := listBasin(""); err != nil {
		return nil, err
	}
	after := ""
	for {
		bs, more, err := ListBasins(ctx, s, "", after, 1000)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if err := listBasin(b); err != nil {
				return nil, err
			}
		}
		if !more || len(bs) == 0 {
			return all, nil
		}
		after = bs[len(bs)-1]
	}
}

// GoneStreams lists the streams that have objects in the store but no manifest (or only a
// deleted stream's tombstone): what a deletion cut short, or a producer's upload that landed
// after it, left behind for the collector (gc.Collector.Pass sweeps such a stream). It walks
// the root namespace and every basin's directory, whether or not the basin still has its
// marker (a deleted basin's streams are gone too).
func GoneStreams(ctx context.Context, s objectstore.Store) ([]Stream, error) {
	var gone []Stream
	visit := func(st Stream) { gone = append(gone, st) }
	if err := walkGone(ctx, s, "", visit); err != nil {
		return nil, err
	}
	after := "basins/"
	for {
		page, err := s.List(ctx, "basins/", after, 1)
		if err != nil {
			return nil, err
		}
		if len(page.Objects) == 0 {
			return gone, nil
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(page.Objects[0].Key, "basins/"), "/")
		if ValidateBasinName(name) == nil {
			if err := walkGone(ctx, s, name, visit); err != nil {
				return nil, err
			}
		}
		after = "basins/" + name + "0" // past this basin's keys: '0' sorts after '/'
	}
}

// walkGone calls visit for each stream directory under basin's streams root that holds data
// or segment objects but no manifest with content. The walk lists each directory's first data
// and segment object and its manifest, and skips the rest of its runs (as ListStreams does).
func walkGone(ctx context.Context, s objectstore.Store, basin string, visit func(Stream)) error {
	root := streamsRoot(basin)
	cur, live, objects := "", false, false
	flush := func() {
		if cur != "" && objects && !live {
			if name, err := DecodeDir(cur); err == nil {
				if st, err := Locate(basin, name); err == nil {
					visit(st)
				}
			}
		}
		cur, live, objects = "", false, false
	}
	err := walkDirs(ctx, s, root, root, root, func(enc, tail string, o objectstore.ObjectInfo) bool {
		if enc != cur {
			flush()
			cur = enc
		}
		switch {
		case tail == "manifest":
			live = o.Size > 0 // an empty object is a deleted stream's tombstone
		case strings.HasPrefix(tail, "data/"), strings.HasPrefix(tail, "manifest.seg/"):
			objects = true
		}
		return true
	})
	if err != nil {
		return err
	}
	flush()
	return nil
}
