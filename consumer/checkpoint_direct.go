package consumer

import (
	"context"
	"errors"

	"github.com/sluice-dev/sluice/manifest"
)

// directCheckpoint is what a member's own checkpoint write found.
type directCheckpoint struct {
	snap    *manifest.Snapshot // the manifest after the write (nil unless written or unchanged)
	gone    bool               // the stream of the member's generation no longer exists
	fenced  bool               // the member's epoch is stale
	current uint64             // with fenced: the group's epoch now (0: the group is gone)
}

// writeCheckpointDirect moves group's checkpoint to seq, for the member at epoch of the
// stream generation gen, with one conditional update of the manifest (when no committer
// writes it). A checkpoint already at or past seq is no change, and no write. The other
// errors are the store's.
func writeCheckpointDirect(ctx context.Context, h *manifest.Handle, gen [16]byte, group string, epoch, seq uint64) (directCheckpoint, error) {
	var stale *manifest.StaleEpochError
	snap, err := h.Update(ctx, func(st *manifest.State) error {
		if st.Generation != gen {
			return manifest.ErrGenerationChanged
		}
		changed, err := st.SetCheckpoint(group, epoch, seq)
		if err != nil {
			return err
		}
		if !changed {
			return manifest.ErrNoChange
		}
		return nil
	})
	switch {
	case errors.Is(err, manifest.ErrGenerationChanged), errors.Is(err, manifest.ErrNotExist):
		return directCheckpoint{gone: true}, nil
	case errors.As(err, &stale):
		return directCheckpoint{fenced: true, current: stale.Current}, nil
	case errors.Is(err, manifest.ErrNoGroup):
		return directCheckpoint{fenced: true}, nil
	case err != nil:
		return directCheckpoint{}, err
	}
	return directCheckpoint{snap: snap}, nil
}
