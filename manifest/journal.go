package manifest

import (
	"errors"
	"fmt"
	"math"

	"github.com/sluice-dev/sluice/journal"
)

// JournalPointer says that windows ID/From, ID/From+1, ... may hold commits of this stream
// that the manifest does not show (docs/journal.md). FoldJournal applies them.
type JournalPointer struct {
	ID   journal.ID
	From uint64
}

// ErrJournalOpen: Apply was asked to append to a stream whose manifest names a journal the
// caller does not own. Seal the journal first (Handle.SealJournal), then reload.
var ErrJournalOpen = errors.New("manifest: the stream has commits in a journal it does not own; seal it first")

// OwnJournal marks this in-memory state as the writer of journal id, so that Apply appends
// to it while its pointer names id. The mark is not encoded (a decoded state has none) and
// is kept by Clone.
func (s *State) OwnJournal(id journal.ID) {
	s.ownJournal, s.ownJournalSet = id, true
}

// journalOpen returns an error matching ErrJournalOpen when s names a journal it does not own.
func (s *State) journalOpen() error {
	if s.Journal == nil || (s.ownJournalSet && s.ownJournal == s.Journal.ID) {
		return nil
	}
	return fmt.Errorf("%w (journal %s from %d)", ErrJournalOpen, s.Journal.ID, s.Journal.From)
}

// anyRanged reports whether an entry is ranged: a manifest or segment holding one is
// written in the ranged format.
func anyRanged(entries []Entry) bool {
	for i := range entries {
		if entries[i].Ranged() {
			return true
		}
	}
	return false
}

// checkRange checks a ranged entry's byte range: it lies within what a uint64 offset can
// name, and covers the whole batch object (ObjectBytes == Length). An unranged entry has
// no offset.
func (en *Entry) checkRange(key string, i int) error {
	switch {
	case en.Length == 0 && en.Offset != 0:
		return corrupt(key, "entry %d: offset %d without a length", i, en.Offset)
	case en.Length > 0 && en.ObjectBytes != en.Length:
		return corrupt(key, "entry %d: %d object bytes in a range of %d", i, en.ObjectBytes, en.Length)
	case en.Length > math.MaxUint64-en.Offset:
		return corrupt(key, "entry %d: range at %d of %d bytes overflows", i, en.Offset, en.Length)
	}
	return nil
}
