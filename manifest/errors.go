package manifest

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrCorrupt is matched by every error that reports a manifest or segment object that
	// cannot be decoded (bad magic, bad checksum, truncated or inconsistent body). It is a
	// class of its own: corruption is never silently skipped.
	ErrCorrupt = errors.New("manifest: corrupt object")
	// ErrUnsupportedVersion: the object was written by a newer format version.
	ErrUnsupportedVersion = errors.New("manifest: unsupported format version")
	// ErrNotExist: there is no manifest at the path (the stream does not exist).
	ErrNotExist = errors.New("manifest: stream does not exist")
	// ErrExists: Create found a manifest already at the path.
	ErrExists = errors.New("manifest: stream already exists")
	// ErrConflict: a conditional write lost against another writer (the manifest is no longer
	// at the version the write was based on). Reload and re-apply.
	ErrConflict = errors.New("manifest: version conflict")
	// ErrOutcomeUnknown: a manifest write may or may not have taken effect. It wraps
	// objectstore.ErrOutcomeUnknown as well.
	ErrOutcomeUnknown = errors.New("manifest: write outcome unknown")
	// ErrGenerationChanged: the manifest now belongs to another generation of the stream (the
	// stream was deleted and created again).
	ErrGenerationChanged = errors.New("manifest: stream generation changed")
	// ErrConditionFailed is matched by SeqNumMismatchError and FencingTokenMismatchError: an
	// append condition that failed at commit time (S2's HTTP 412).
	ErrConditionFailed = errors.New("manifest: append condition failed")
	// ErrTimestampRequired: the stream's timestamping mode is client-require and a record of
	// the append has no timestamp.
	ErrTimestampRequired = errors.New("manifest: timestamping mode client-require: record has no timestamp")
	// ErrPrecedingAppendFailed: the append followed, in one chain (an append session's
	// appends, see Batch.Skip), an append that failed; it is not applied, so that nothing of
	// a session after its first failure enters the stream.
	ErrPrecedingAppendFailed = errors.New("manifest: an earlier append of the session failed")
	// ErrNoChange may be returned by an Update function to skip the write.
	ErrNoChange = errors.New("manifest: no change")
	// ErrInvalidConfig is matched by every stream configuration problem.
	ErrInvalidConfig = errors.New("manifest: invalid stream config")
	// ErrInvalidBatch: a Batch handed to Apply is malformed (programming error of the caller).
	ErrInvalidBatch = errors.New("manifest: invalid batch")
	// ErrStaleEpoch is matched by StaleEpochError.
	ErrStaleEpoch = errors.New("manifest: stale consumer epoch")
	// ErrNoGroup: the named consumer group does not exist.
	ErrNoGroup = errors.New("manifest: no such consumer group")
)

// CorruptError describes an undecodable manifest or segment object. It matches ErrCorrupt.
type CorruptError struct {
	Key    string // object key, if known
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Key == "" {
		return "manifest: corrupt object: " + e.Reason
	}
	return fmt.Sprintf("manifest: corrupt object %q: %s", e.Key, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// SeqNumMismatchError: an append's match_seq_num was not the stream's tail seq_num. Expected is
// the seq_num the append would have had to name (S2: `{"seq_num_mismatch": Expected}`).
type SeqNumMismatchError struct {
	Expected uint64
}

func (e *SeqNumMismatchError) Error() string {
	return fmt.Sprintf("manifest: seq_num mismatch: expected %d", e.Expected)
}

// Is makes errors.Is(err, ErrConditionFailed) true.
func (e *SeqNumMismatchError) Is(target error) bool { return target == ErrConditionFailed }

// FencingTokenMismatchError: an append's fencing token was not the stream's. Actual is the
// stream's token at that point (S2: `{"fencing_token_mismatch": Actual}`).
type FencingTokenMismatchError struct {
	Actual string
}

func (e *FencingTokenMismatchError) Error() string {
	return fmt.Sprintf("manifest: fencing token mismatch: actual %q", e.Actual)
}

// Is makes errors.Is(err, ErrConditionFailed) true.
func (e *FencingTokenMismatchError) Is(target error) bool { return target == ErrConditionFailed }

// StaleEpochError: a consumer-group member acted with an epoch older than the group's.
type StaleEpochError struct {
	Group   string
	Epoch   uint64 // the member's epoch
	Current uint64 // the group's epoch in the manifest
}

func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("manifest: consumer group %q: epoch %d is stale (current %d)", e.Group, e.Epoch, e.Current)
}

// Is makes errors.Is(err, ErrStaleEpoch) true.
func (e *StaleEpochError) Is(target error) bool { return target == ErrStaleEpoch }

func corrupt(key, format string, args ...any) error {
	return &CorruptError{Key: key, Reason: fmt.Sprintf(format, args...)}
}
