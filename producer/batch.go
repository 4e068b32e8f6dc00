package producer

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/journal"
)

// batchState is where a batch is in its life. Every change goes through batch.to, which
// holds the allowed transitions:
//
//	open ─seal─▶ sealed ─▶ uploading ─▶ uploaded ─▶ writing ──ok──▶ resolved
//	                                       ▲           │
//	                                       └─no effect─┤ unknown outcome
//	                                                   ▼
//	                            resolved ◀──ok── maybeWritten ⟲ later writes
//
// Any state but writing and maybeWritten may also go to resolved by failing (delivery
// timeout, a producer failure, Close); a batch a write may have committed is resolved only
// from what the manifest says, or by Close as ErrOutcomeUnknown. The commit loop re-uploads a
// stale batch (CommitDeadline) without changing its state.
type batchState uint8

const (
	stateOpen         batchState = iota // Producer.open: taking appends
	stateSealed                         // flushed: in pending and toUpload
	stateUploading                      // an uploader is storing its object
	stateUploaded                       // its object is stored: the commit loop's to take
	stateWriting                        // a manifest write holding it is in flight
	stateMaybeWritten                   // a write holding it had an unknown outcome
	stateResolved                       // its tickets resolved; nothing more is done with it
)

var stateNames = [...]string{"open", "sealed", "uploading", "uploaded", "writing", "maybe-written", "resolved"}

func (s batchState) String() string { return stateNames[s] }

// allowed[from] lists the states a batch may move to from from.
var allowed = [...][]batchState{
	stateOpen:         {stateSealed, stateResolved},
	stateSealed:       {stateUploading, stateResolved},
	stateUploading:    {stateUploaded, stateResolved},
	stateUploaded:     {stateWriting, stateResolved},
	stateWriting:      {stateUploaded, stateMaybeWritten, stateResolved},
	stateMaybeWritten: {stateMaybeWritten, stateResolved},
	stateResolved:     nil,
}

// batch is one batch object: the appends flushed together, from open to commit. Its fields
// are guarded by Producer.mu, except data, key and uploadStart, which only the goroutine
// that holds the batch (an uploader while uploading, the commit loop after) touches.
type batch struct {
	num     uint64
	state   batchState
	enc     *batchfmt.Encoder
	appends []*batchfmt.AppendInput
	tickets []*Ticket
	chained bool // some ticket has a Chain
	metered int64
	opened  time.Time
	// arrivalMs is the producer's clock at the flush (the timestamping rules use it).
	arrivalMs uint64
	// preWait is the longest an append of it waited to be accepted (ReceivedAt); deadline
	// is when DeliveryTimeout fails it: its flush plus DeliveryTimeout less preWait.
	preWait  time.Duration
	deadline time.Time

	data        []byte // the encoded object (aliases enc's buffer)
	key         string
	uploadStart time.Time
	lastErr     error // its last upload's error, the cause named if it expires
	// sent: a manifest write holding it was sent, so a failure before its outcome is known
	// is reported with ErrOutcomeUnknown (a refused write may still be a retry of one that
	// landed).
	sent bool
	// reuploads counts its uploads again for CommitDeadline.
	reuploads int
	// triedKeys are the keys it was named by in attempted manifest writes: an entry under
	// its batch number with another key is not its own. A request that carried its bytes
	// to a journal committer adds "" (the committer named it by a journal window).
	triedKeys []string
}

// named reports whether an entry with key can be this batch's: one of the keys it was
// written under, or a journal window if it was ever carried to a journal committer.
func (b *batch) named(key string) bool {
	if slices.Contains(b.triedKeys, key) {
		return true
	}
	_, _, window := journal.ParseKey(key)
	return window && slices.Contains(b.triedKeys, "")
}

// carried reports whether b has not been uploaded: its bytes go to a journal committer in
// the process (commitclient.Client.CanCarry), or it is uploaded before any other commit.
func (b *batch) carried() bool { return b.key == "" }

// to moves b to next. A transition the table does not allow is a bug in this package.
func (b *batch) to(next batchState) {
	for _, s := range allowed[b.state] {
		if s == next {
			b.state = next
			return
		}
	}
	panic(fmt.Sprintf("producer: batch %d: no transition from %v to %v", b.num, b.state, next))
}

// mayBeCommitted reports whether a manifest write may have committed b (one holds it now,
// or one that held it had an unknown outcome): then only the manifest can resolve it.
func (b *batch) mayBeCommitted() bool {
	return b.state == stateWriting || b.state == stateMaybeWritten
}

// outcome is the error of b's appends when the producer stops or fails before b resolves.
func (b *batch) outcome(err error) error {
	if b.sent {
		return errors.Join(ErrOutcomeUnknown, err)
	}
	return err
}

// ready reports whether the commit loop may take b: its object is stored.
func (b *batch) ready() bool {
	return b.state == stateUploaded || b.state == stateMaybeWritten
}
