package commitclient

import (
	"errors"
	"fmt"
)

var (
	// ErrUnreachable: the request did not reach the committer (nothing of it was
	// committed). Transports wrap it.
	ErrUnreachable = errors.New("commitclient: committer unreachable")
	// ErrDirect: no committer to ask now (none live or configured, or one failed less than
	// DirectFor ago); nothing was sent, and the caller commits directly.
	ErrDirect = errors.New("commitclient: no committer to ask; commit directly")
	// ErrCarried: a request whose batches carry their bytes (wire.Batch.Data) was for a
	// committer that cannot take them (one in another process, or one without a journal);
	// nothing was sent. The writer uploads the batches and commits them another way.
	ErrCarried = errors.New("commitclient: batches that carry their bytes go only to a journal committer in this process")
)

// Error is a request that a committer did not commit, or not surely.
type Error struct {
	// URL is the committer asked last (the role's holder, after a role_held redirect).
	URL string
	// Unknown: the request may have been committed (a lost answer, wire.CodeStorage, an
	// answer that does not fit); false when it surely was not (it did not arrive, or the
	// committer refused it).
	Unknown bool
	// Err is the committer's *wire.Error when it answered so, else why no answer came.
	Err error
}

func (e *Error) Error() string {
	outcome := "not committed"
	if e.Unknown {
		outcome = "outcome unknown"
	}
	return fmt.Sprintf("commitclient: committer %s (%s): %v", e.URL, outcome, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// OutcomeUnknown reports whether err, from Client.Commit, leaves open whether the request
// was committed.
func OutcomeUnknown(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Unknown
}
