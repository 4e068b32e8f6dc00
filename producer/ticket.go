package producer

import (
	"context"
	"time"

	"github.com/sluice-dev/sluice/manifest"
)

// Position is a record's place in the stream.
type Position = manifest.Position

// Ack acknowledges a committed append: Start is its first record's position, End the
// position after its last (End.SeqNum exclusive; End.Timestamp is the last record's), Tail
// the stream's tail after the manifest write that committed it.
type Ack struct {
	Start, End, Tail Position
}

// Ticket resolves when its append is committed or has failed. Failures:
// *manifest.SeqNumMismatchError, *manifest.FencingTokenMismatchError,
// manifest.ErrTimestampRequired and manifest.ErrPrecedingAppendFailed (its condition failed
// at commit: nothing of it is in the stream), ErrDeliveryTimeout, ErrAborted,
// ErrOutcomeUnknown, ErrPositionsUnavailable, ErrProducerIDReused, or a fatal stream error
// (manifest.ErrNotExist, ErrGenerationChanged, ErrCorrupt), joined with ErrOutcomeUnknown
// when a write holding it may have taken effect.
type Ticket struct {
	done    chan struct{}
	ack     Ack
	err     error
	records int
	metered int64
	start   time.Time
	chain   *Chain // WithChain's, or nil
}

// Done is closed when the ticket has resolved.
func (t *Ticket) Done() <-chan struct{} { return t.done }

// Result returns the outcome; call it after Done is closed.
func (t *Ticket) Result() (Ack, error) {
	<-t.done
	return t.ack, t.err
}

// Wait waits for the outcome or for ctx (which does not affect the append).
func (t *Ticket) Wait(ctx context.Context) (Ack, error) {
	select {
	case <-t.done:
		return t.ack, t.err
	case <-ctx.Done():
		return Ack{}, ctx.Err()
	}
}
