package consumer

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/sluice-dev/sluice/committer"
)

// committerURL is where to send the next checkpoint: the stream's live committer, else
// Config.Committer; "" to write it directly.
func (c *Consumer) committerURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Now().Before(c.directUntil) {
		return ""
	}
	return committer.URL(c.role, c.r.cfg.Committer, time.Now())
}

// flushVia asks the committer at url to write the group's checkpoint low with its next
// commit. done is false when it did not answer (or could not write it): the caller writes
// the checkpoint itself. A checkpoint is idempotent (it never moves backwards), so writing
// it again after an unknown outcome is safe.
func (c *Consumer) flushVia(ctx context.Context, url string, low uint64) (done bool, err error) {
	req := &committer.Request{ManifestPath: c.r.cfg.ManifestPath, Generation: hex.EncodeToString(c.gen[:]),
		Checkpoints: []committer.Checkpoint{{Group: c.group, Epoch: c.epoch, SeqNum: low}}}
	var cl committer.Caller = &committer.Client{Token: c.r.cfg.CommitterToken}
	if c.r.cfg.CommitterCaller != nil {
		cl = c.r.cfg.CommitterCaller
	}
	rctx, cancel := context.WithTimeout(ctx, committer.RequestTimeout)
	resp, err := cl.Commit(rctx, url, req)
	cancel()
	switch {
	case err == nil && resp.Error != nil && resp.Error.Code == committer.CodeGeneration:
		return true, c.setGone()
	case err != nil || resp.Error != nil || len(resp.Checkpoints) != 1:
		if err == nil {
			err = resp.Error
			if err == nil {
				err = errors.New("committer: no checkpoint result")
			}
		}
		c.mu.Lock()
		c.directUntil = time.Now().Add(committer.DirectFor)
		c.mu.Unlock()
		c.r.cfg.Logger.Warn("committer failed; writing checkpoints directly", "group", c.group, "committer", url, "err", err)
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
	if resp.Role != nil {
		c.mu.Lock()
		if resp.Role.UntilMs > c.role.UntilMs {
			c.role = *resp.Role // renewed: keep sending there without reading the manifest
		}
		c.mu.Unlock()
	}
	c.r.m.ackWrites.Inc()
	c.wrote(r.Checkpoint)
	return true, nil
}
