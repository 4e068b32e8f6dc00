package manifest

import (
	"errors"
	"fmt"
	"time"
)

// ErrUnsafeCommitDeadline is matched by CheckCommitDeadline's errors.
var ErrUnsafeCommitDeadline = errors.New("manifest: commit deadline unsafe beside the grace period")

// CheckCommitDeadline is the rule that keeps the collector from deleting a batch object that
// a producer commits afterwards: producers give up on an upload older than commitDeadline
// (and upload it again under a new key), and the collector deletes no unreferenced object
// younger than gracePeriod by the store's clock, so commitDeadline must be more than 0 and at
// most half of gracePeriod (the other half covers the commit's own time and the clocks'
// skew), and shorter than ProducerExpiry (a producer's row must outlive its writes). Package
// producer checks the deadline's own bounds; package gc checks the pair
// (gc.Config.CommitDeadline), and a program that configures both may call it itself.
func CheckCommitDeadline(commitDeadline, gracePeriod time.Duration) error {
	switch {
	case commitDeadline <= 0 || commitDeadline >= ProducerExpiry:
		return fmt.Errorf("%w: commit deadline %v must be > 0 and shorter than the producer table expiry %v", ErrUnsafeCommitDeadline, commitDeadline, ProducerExpiry)
	case commitDeadline > gracePeriod/2:
		return fmt.Errorf("%w: commit deadline %v is more than half the grace period %v: the collector could delete an upload that a producer still commits", ErrUnsafeCommitDeadline, commitDeadline, gracePeriod)
	}
	return nil
}
