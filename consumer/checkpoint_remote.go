package consumer

import (
	"context"
	"errors"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
)

// flushVia asks the stream's committer (the commit client's route) to write the group's
// checkpoint low with its next commit. done is false when there is none to ask now, or it
// did not answer (or could not write it): the caller writes the checkpoint itself, and
// after a failure the client routes the next ones directly for a while. A checkpoint is idempotent (it never moves backwards), so writing
// it again after an unknown outcome is safe.
func (c *Consumer) flushVia(ctx context.Context, low uint64) (done bool, err error) {
	req := &wire.Request{ManifestPath: c.r.cfg.Stream.ManifestKey(), Generation: wire.Generation(c.gen),
		Checkpoints: []wire.Checkpoint{{Group: c.group, Epoch: c.epoch, SeqNum: low}}}
	resp, err := c.cc.Commit(ctx, req)
	var refused *wire.Error
	switch {
	case errors.As(err, &refused) && refused.Code == wire.CodeGeneration:
		return true, c.setGone()
	case errors.Is(err, commitclient.ErrDirect):
		return false, nil
	case err != nil:
		c.r.cfg.Logger.Warn("committer failed; writing checkpoints directly", "group", c.group, "err", err)
		return false, nil
	}
	r := resp.Checkpoints[0]
	switch {
	case r.StaleEpoch != nil:
		return true, c.setFenced(*r.StaleEpoch)
	case r.NoGroup:
		return true, c.setFenced(0)
	case r.Error != "":
		c.r.m.ackErrors.Inc()
		return true, errors.New("consumer: write checkpoint of group " + c.group + ": " + r.Error)
	}
	c.r.m.ackWrites.Inc()
	c.wrote(r.Checkpoint)
	return true, nil
}
