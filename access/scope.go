package access

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-dev/sluice/s2api"
)

// SetKind tells how a ResourceSet matches names.
type SetKind uint8

// The kinds of resource sets.
const (
	// None matches nothing: an omitted set, or S2's empty exact name.
	None SetKind = iota
	// Exact matches one name.
	Exact
	// Prefix matches every name that starts with the set's name; "" matches all.
	Prefix
)

// ResourceSet is a set of basin names, stream names or token ids. The zero value matches
// nothing.
type ResourceSet struct {
	Kind SetKind
	Name string // the exact name or the prefix
}

// ExactSet and PrefixSet build resource sets. ExactSet("") matches nothing, as in S2.
func ExactSet(name string) ResourceSet {
	if name == "" {
		return ResourceSet{}
	}
	return ResourceSet{Kind: Exact, Name: name}
}

// PrefixSet matches every name starting with prefix (everything for "").
func PrefixSet(prefix string) ResourceSet { return ResourceSet{Kind: Prefix, Name: prefix} }

// AllSet matches every name.
var AllSet = PrefixSet("")

// Matches reports whether name is in the set.
func (rs ResourceSet) Matches(name string) bool {
	switch rs.Kind {
	case Exact:
		return name == rs.Name
	case Prefix:
		return strings.HasPrefix(name, rs.Name)
	}
	return false
}

// SubsetOf reports whether every name rs matches, t matches too.
func (rs ResourceSet) SubsetOf(t ResourceSet) bool {
	switch rs.Kind {
	case None:
		return true
	case Exact:
		return t.Matches(rs.Name)
	}
	// A prefix set is infinite: only a prefix set that is its prefix holds it.
	return t.Kind == Prefix && strings.HasPrefix(rs.Name, t.Name)
}

func (rs ResourceSet) String() string {
	switch rs.Kind {
	case Exact:
		return fmt.Sprintf("exact %q", rs.Name)
	case Prefix:
		return fmt.Sprintf("prefix %q", rs.Name)
	}
	return "none"
}

// ListWindow narrows a listing (names starting with prefix, after startAfter) to the
// names the set can match. It returns the listing to run, and ok false if nothing in the set
// can be listed. The caller still drops the names the set does not match (Matches): an exact
// set is listed as a prefix.
func (rs ResourceSet) ListWindow(prefix, startAfter string) (p, after string, ok bool) {
	switch rs.Kind {
	case Prefix:
		switch {
		case strings.HasPrefix(prefix, rs.Name):
			return prefix, startAfter, true
		case strings.HasPrefix(rs.Name, prefix):
			return rs.Name, startAfter, true
		}
	case Exact:
		if strings.HasPrefix(rs.Name, prefix) && rs.Name > startAfter {
			return rs.Name, startAfter, true
		}
	}
	return "", "", false
}

// ReadWrite grants a group's reads, writes or both.
type ReadWrite struct {
	Read, Write bool
}

// Scope is what a token may do: the operations it may call (Ops and the operations of the
// groups it is granted, together) on the basins, streams and token ids of its sets.
type Scope struct {
	Basins, Streams, AccessTokens ResourceSet
	Account, Basin, Stream        ReadWrite // the operation groups granted
	Ops                           OpSet     // operations granted one by one
}

// FullScope can do everything: the root token's.
var FullScope = Scope{
	Basins: AllSet, Streams: AllSet, AccessTokens: AllSet,
	Account: ReadWrite{true, true}, Basin: ReadWrite{true, true}, Stream: ReadWrite{true, true},
}

// Allowed returns the effective set of operations: Ops and the groups' operations.
func (sc Scope) Allowed() OpSet {
	set := sc.Ops
	for _, op := range Operations() {
		g, w := op.Class()
		var rw ReadWrite
		switch g {
		case GroupAccount:
			rw = sc.Account
		case GroupBasin:
			rw = sc.Basin
		case GroupStream:
			rw = sc.Stream
		}
		if (w && rw.Write) || (!w && rw.Read) {
			set = set.With(op)
		}
	}
	return set
}

// Allows reports whether the scope grants op (resources aside).
func (sc Scope) Allows(op Operation) bool { return sc.Allowed().Has(op) }

// SubsetOf reports whether sc grants nothing that t does not: its operations and each of its
// resource sets are within t's. A token can issue only a scope that is a subset of its own.
func (sc Scope) SubsetOf(t Scope) bool {
	return sc.Allowed().SubsetOf(t.Allowed()) && sc.Basins.SubsetOf(t.Basins) &&
		sc.Streams.SubsetOf(t.Streams) && sc.AccessTokens.SubsetOf(t.AccessTokens)
}

// ErrInvalidScope is the class of scopes and requests that do not parse or make no sense.
var ErrInvalidScope = errors.New("access: invalid scope")

// ScopeFromWire checks and converts S2's JSON scope.
func ScopeFromWire(w s2api.AccessTokenScope) (Scope, error) {
	var sc Scope
	var errs []error
	set := func(field string, rs *s2api.ResourceSet) ResourceSet {
		r, err := setFromWire(field, rs)
		errs = append(errs, err)
		return r
	}
	sc.Basins = set("basins", w.Basins)
	sc.Streams = set("streams", w.Streams)
	sc.AccessTokens = set("access_tokens", w.AccessTokens)
	if g := w.OpGroups; g != nil {
		sc.Account, sc.Basin, sc.Stream = rwFromWire(g.Account), rwFromWire(g.Basin), rwFromWire(g.Stream)
	}
	for _, name := range w.Ops {
		op, err := ParseOperation(name)
		errs = append(errs, err)
		sc.Ops = sc.Ops.With(op)
	}
	if err := errors.Join(errs...); err != nil {
		return Scope{}, err
	}
	return sc, nil
}

func setFromWire(field string, rs *s2api.ResourceSet) (ResourceSet, error) {
	switch {
	case rs == nil:
		return ResourceSet{}, nil
	case rs.Exact != nil && rs.Prefix != nil:
		return ResourceSet{}, fmt.Errorf("%w: %s gives both exact and prefix", ErrInvalidScope, field)
	case rs.Exact != nil:
		return ExactSet(*rs.Exact), nil
	case rs.Prefix != nil:
		return PrefixSet(*rs.Prefix), nil
	}
	return ResourceSet{}, fmt.Errorf("%w: %s gives neither exact nor prefix", ErrInvalidScope, field)
}

func rwFromWire(p *s2api.ReadWritePermissions) ReadWrite {
	if p == nil {
		return ReadWrite{}
	}
	return ReadWrite{Read: p.Read, Write: p.Write}
}

// Wire returns the scope as S2's JSON has it. A set that matches nothing is omitted.
func (sc Scope) Wire() s2api.AccessTokenScope {
	rw := func(r ReadWrite) *s2api.ReadWritePermissions {
		return &s2api.ReadWritePermissions{Read: r.Read, Write: r.Write}
	}
	w := s2api.AccessTokenScope{
		Basins: sc.Basins.wire(), Streams: sc.Streams.wire(), AccessTokens: sc.AccessTokens.wire(),
		OpGroups: &s2api.PermittedOperationGroups{Account: rw(sc.Account), Basin: rw(sc.Basin), Stream: rw(sc.Stream)},
		Ops:      []string{},
	}
	for _, op := range sc.Ops.List() {
		w.Ops = append(w.Ops, op.String())
	}
	return w
}

func (rs ResourceSet) wire() *s2api.ResourceSet {
	name := rs.Name
	switch rs.Kind {
	case Exact:
		return &s2api.ResourceSet{Exact: &name}
	case Prefix:
		return &s2api.ResourceSet{Prefix: &name}
	}
	return nil
}
