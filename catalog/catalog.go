// Package catalog lists the streams and basins of an object store, and keeps basins' marker
// objects.
//
// Where a named stream lives is package stream's layout (stream.Locate): its manifest at
// streams/<enc(name)>/manifest, its batch objects under .../data, and, in a basin,
// basins/<basin>/streams/... instead. This package adds the basins' markers,
//
//	basins/<basin>/basin                    a basin's marker and settings (JSON)
//
// and walks the layout to list streams (ListStreams, StreamNames, AllStreams), basins
// (ListBasins) and what deleted streams left behind (GoneStreams).
package catalog

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// The keys of a located stream below its directory: its batch objects' and its segments'
// (see stream.Locate).
var (
	dataTail    = stream.DataName + "/"
	segmentTail = stream.SegmentPrefix(stream.ManifestName)
)

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
func ListStreams(ctx context.Context, s objectstore.Store, basin, prefix, startAfter string, limit int) (streams []stream.Stream, more bool, err error) {
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
		st, _ := stream.Locate(basin, name)
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
	root := stream.Root(basin)
	// Narrow the listing to the prefix while its encoding surely sits in the first segment;
	// names are filtered by prefix below in any case.
	encPrefix := root
	if p := stream.EncodeName(prefix); len(p) < stream.MaxSegmentLen-3 {
		encPrefix = root + p
	}
	return walkDirs(ctx, s, root, encPrefix, root, func(enc, tail string, o objectstore.ObjectInfo) bool {
		if tail != stream.ManifestName {
			return true
		}
		name, derr := stream.DecodeDir(enc)
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
			case strings.HasPrefix(tail, dataTail):
				// Skip the stream's data objects: "data0" sorts after every "data/...".
				after = root + enc + "/" + stream.DataName + "0"
			case strings.HasPrefix(tail, segmentTail):
				after = root + enc + "/" + strings.TrimSuffix(segmentTail, "/") + "0" // likewise its sealed segments
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
func AllStreams(ctx context.Context, s objectstore.Store) ([]stream.Stream, error) {
	var all []stream.Stream
	listBasin := func(basin string) error {
		names, err := StreamNames(ctx, s, basin, "")
		if err != nil {
			return err
		}
		for _, name := range names {
			st, _ := stream.Locate(basin, name)
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
func GoneStreams(ctx context.Context, s objectstore.Store) ([]stream.Stream, error) {
	var gone []stream.Stream
	visit := func(st stream.Stream) { gone = append(gone, st) }
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
		if stream.ValidateBasinName(name) == nil {
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
func walkGone(ctx context.Context, s objectstore.Store, basin string, visit func(stream.Stream)) error {
	root := stream.Root(basin)
	cur, live, objects := "", false, false
	flush := func() {
		if cur != "" && objects && !live {
			if name, err := stream.DecodeDir(cur); err == nil {
				if st, err := stream.Locate(basin, name); err == nil {
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
		case tail == stream.ManifestName:
			live = o.Size > 0 // an empty object is a deleted stream's tombstone
		case strings.HasPrefix(tail, dataTail), strings.HasPrefix(tail, segmentTail):
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
