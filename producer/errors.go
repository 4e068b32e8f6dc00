package producer

import (
	"errors"
	"fmt"

	"github.com/sluice-dev/sluice/objectstore"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrClosed: the producer is closed (or closing) and accepts no more appends.
	ErrClosed = errors.New("producer: closed")
	// ErrAborted: Close gave up before the append was committed; it is not in the stream.
	ErrAborted = errors.New("producer: aborted before commit")
	// ErrOutcomeUnknown: the producer stopped while a manifest write holding the append may
	// have taken effect: the append may or may not be in the stream.
	ErrOutcomeUnknown = errors.New("producer: aborted, commit outcome unknown")
	// ErrPositionsUnavailable: the append was committed, but its entry had left the manifest
	// (trimmed or acknowledged) before the producer could read its positions back.
	ErrPositionsUnavailable = errors.New("producer: committed, but positions no longer available")
	// ErrProducerIDReused: another process committed this producer id and batch number (a
	// fixed ProducerID reused too soon after a crash). The append's outcome is unknown.
	ErrProducerIDReused = errors.New("producer: producer id reused: another process committed this batch number")
	// ErrDeliveryTimeout: the append was not committed within Config.DeliveryTimeout (see
	// there), or an append accepted before it was not. The append is not in the stream. It
	// wraps the store's refusal behind it (objectstore.Refused), if that was the cause.
	ErrDeliveryTimeout = errors.New("producer: delivery timeout")
)

// causeOf is err as ErrDeliveryTimeout wraps it: a refusal of the store as it is, anything
// else as text only, so that a delivery timeout never also matches ErrOutcomeUnknown or a
// conflict.
func causeOf(err error) error {
	if objectstore.Refused(err) {
		return err
	}
	return errors.New(err.Error())
}

// errSubmittedBeforeExpiry fails Submit's records accepted before DeliveryTimeout failed
// batches.
var errSubmittedBeforeExpiry = fmt.Errorf("%w: submitted before earlier appends failed with it", ErrDeliveryTimeout)
