package manifest

import (
	"errors"
	"fmt"
	"time"
)

// ErrRoleHeld: another live committer holds the stream's committer role.
var ErrRoleHeld = errors.New("manifest: committer role held by another committer")

// CommitterRole names the process that commits the stream's batches for other writers (the
// commit path in DESIGN.md), where it takes commit requests, and until when it holds the
// role. It is taken and renewed with the manifest's own conditional writes, so the If-Match
// of each write stays the only arbiter: a committer that lost the role cannot commit. The
// zero value means no committer.
type CommitterRole struct {
	ID      string // the committer's id (unique per process)
	URL     string // where it takes commit requests
	UntilMs uint64 // the role lapses at this Unix time, in ms, by the holder's clock
}

// Live reports whether the role is held at now.
func (r CommitterRole) Live(now time.Time) bool {
	return r.ID != "" && uint64(max(now.UnixMilli(), 0)) < r.UntilMs
}

// RoleHeldError is ErrRoleHeld with the holder.
type RoleHeldError struct{ Holder CommitterRole }

func (e *RoleHeldError) Error() string {
	return fmt.Sprintf("%v: %s at %s until %s", ErrRoleHeld, e.Holder.ID, e.Holder.URL,
		time.UnixMilli(int64(e.Holder.UntilMs)).UTC().Format(time.RFC3339Nano))
}
func (e *RoleHeldError) Unwrap() error { return ErrRoleHeld }

// TakeRole makes id (at url) the stream's committer until now+lease: when no committer
// holds the role, when it lapsed, or to renew it. It fails with *RoleHeldError while
// another committer's role is live. Write the state to make it take effect.
func (s *State) TakeRole(id, url string, now time.Time, lease time.Duration) error {
	if id == "" || lease <= 0 {
		return fmt.Errorf("%w: committer role needs an id and a positive lease", ErrInvalidBatch)
	}
	if cur := s.Committer; cur.ID != id && cur.Live(now) {
		return &RoleHeldError{Holder: cur}
	}
	s.Committer = CommitterRole{ID: id, URL: url, UntilMs: uint64(max(now.Add(lease).UnixMilli(), 0))}
	return nil
}

// ReleaseRole gives up the role if id holds it (a committer shutting down cleanly), so that
// writers commit directly at once instead of waiting for the lease to lapse.
func (s *State) ReleaseRole(id string) {
	if s.Committer.ID == id {
		s.Committer = CommitterRole{}
	}
}
