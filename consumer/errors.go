package consumer

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/manifest"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrInvalidConfig is matched by every configuration problem.
	ErrInvalidConfig = errors.New("consumer: invalid config")
	// ErrInvalidRequest is matched by every problem of a ReadRequest (no start or more than
	// one, a zero limit).
	ErrInvalidRequest = errors.New("consumer: invalid read request")
	// ErrOutOfRange is matched by *RangeError: a read started past the tail without Clamp
	// (S2 answers 416 with the tail).
	ErrOutOfRange = errors.New("consumer: start is past the tail")
	// ErrCorrupt is matched by an *ObjectError whose batch object cannot be decoded or does
	// not agree with its manifest entry. It is a class of its own, never silently skipped;
	// corrupt manifests and segments match manifest.ErrCorrupt instead.
	ErrCorrupt = errors.New("consumer: corrupt batch object")
	// ErrMissingObject is matched by an *ObjectError whose batch object the manifest still
	// references (its entry holds a readable record) but the store does not hold.
	ErrMissingObject = errors.New("consumer: referenced batch object is missing")
	// ErrStreamNotFound: the stream's manifest does not exist (or was deleted). It also
	// matches manifest.ErrNotExist.
	ErrStreamNotFound = errors.New("consumer: stream not found")
	// ErrFenced is matched by *FencedError: another member opened the group after this one.
	ErrFenced = errors.New("consumer: fenced by a newer member of the group")
	// ErrGroupNotFound: the consumer group does not exist (DeleteGroup). It comes with
	// manifest.ErrNoGroup.
	ErrGroupNotFound = errors.New("consumer: no such consumer group")
	// ErrNotDelivered: Ack named a record this member has not been given yet.
	ErrNotDelivered = errors.New("consumer: ack of a record not delivered")
	// ErrClosed: the session or consumer was closed.
	ErrClosed = errors.New("consumer: closed")
	// ErrDone: a session reached one of its limits (count, bytes, until) or, without Follow,
	// the tail. Next returns it after the last batch (io.EOF style).
	ErrDone = errors.New("consumer: read complete")
)

// RangeError: a read's start was past the tail and Clamp was not set.
type RangeError struct {
	Start uint64            // the seq_num the request resolved to
	Tail  manifest.Position // the stream's tail when the read was opened
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("consumer: start seq_num %d is past the tail %d", e.Start, e.Tail.SeqNum)
}

// Is makes errors.Is(err, ErrOutOfRange) true.
func (e *RangeError) Is(target error) bool { return target == ErrOutOfRange }

// ObjectError: a batch object the manifest references could not be read as recorded. It
// names the object and the seq_num range [FirstSeq, EndSeq) the manifest assigns to it.
// It matches ErrMissingObject or ErrCorrupt (Kind), and unwraps to the cause.
type ObjectError struct {
	Key      string
	FirstSeq uint64
	EndSeq   uint64
	Kind     error // ErrMissingObject or ErrCorrupt
	Err      error // the store's or the decoder's error, or a mismatch description
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%v: %q (seq_nums %d..%d): %v", e.Kind, e.Key, e.FirstSeq, e.EndSeq, e.Err)
}

// Unwrap returns the kind and the cause.
func (e *ObjectError) Unwrap() []error { return []error{e.Kind, e.Err} }

// FencedError: a group member's epoch is no longer the group's. The member must stop; its
// unwritten acknowledgements are lost (the records will be delivered again to the newer
// member).
type FencedError struct {
	Group   string
	Epoch   uint64 // this member's epoch
	Current uint64 // the group's epoch in the manifest (0 if the group was deleted)
}

func (e *FencedError) Error() string {
	if e.Current == 0 {
		return fmt.Sprintf("consumer: group %q was deleted (member epoch %d)", e.Group, e.Epoch)
	}
	return fmt.Sprintf("consumer: group %q: member epoch %d fenced by epoch %d", e.Group, e.Epoch, e.Current)
}

// Is makes errors.Is(err, ErrFenced) and errors.Is(err, manifest.ErrStaleEpoch) true.
func (e *FencedError) Is(target error) bool {
	return target == ErrFenced || target == manifest.ErrStaleEpoch
}

type notFoundError struct{ err error }

func (e *notFoundError) Error() string { return "consumer: stream not found: " + e.err.Error() }
func (e *notFoundError) Unwrap() []error {
	return []error{ErrStreamNotFound, manifest.ErrNotExist, e.err}
}
