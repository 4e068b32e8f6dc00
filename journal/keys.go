package journal

import (
	"fmt"
	"strconv"
	"strings"
)

// ID names one journal (one committer incarnation).
type ID uint64

// String is the id as it appears in keys: 16 lower-case hex digits.
func (id ID) String() string { return fmt.Sprintf("%016x", uint64(id)) }

// ParseID reads an id written by String.
func ParseID(s string) (ID, error) {
	if len(s) != 16 || strings.ToLower(s) != s {
		return 0, fmt.Errorf("journal: id %q is not 16 lower-case hex digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("journal: id %q is not 16 lower-case hex digits", s)
	}
	return ID(v), nil
}

// Root is the key prefix of every journal in a store.
const Root = "journals/"

// Prefix is the key prefix of journal id's objects.
func Prefix(id ID) string { return Root + id.String() + "/" }

// Key is the key of object n of journal id. Numbers are zero-padded to 20 digits, so keys
// sort by number in a store's byte-ordered listing.
func Key(id ID, n uint64) string { return fmt.Sprintf("%s%020d", Prefix(id), n) }

// ParseKey returns the journal and number a journal object's key names, or false for any
// other key (including near-misses: a short number, upper-case hex, extra segments).
func ParseKey(key string) (ID, uint64, bool) {
	rest, ok := strings.CutPrefix(key, Root)
	if !ok || len(rest) != 16+1+20 || rest[16] != '/' {
		return 0, 0, false
	}
	id, err := ParseID(rest[:16])
	if err != nil {
		return 0, 0, false
	}
	num := rest[17:]
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return 0, 0, false
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return id, n, true
}
