package gc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// storeClock returns the store's clock: a recent probe's (see Config.ProbeReuse) or a new one.
func (c *Collector) storeClock(ctx context.Context, s stream.Stream) (time.Time, error) {
	c.probeMu.Lock()
	if !c.probeTime.IsZero() && time.Since(c.probeLocal) < c.cfg.ProbeReuse {
		t := c.probeTime
		c.probeMu.Unlock()
		return t, nil
	}
	c.probeMu.Unlock()
	local := time.Now()
	t, err := c.probe(ctx, s)
	if err != nil {
		return t, err
	}
	c.probeMu.Lock()
	if t.After(c.probeTime) {
		c.probeTime, c.probeLocal = t, local
	}
	c.probeMu.Unlock()
	return t, nil
}

func (c *Collector) probe(ctx context.Context, s stream.Stream) (time.Time, error) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	key := s.ProbeKey()
	info, err := objectstore.PutBytes(ctx, c.store, key, []byte(hex.EncodeToString(nonce[:])), objectstore.Unconditional())
	if err != nil {
		return time.Time{}, fmt.Errorf("gc: write clock probe %s: %w", key, err)
	}
	if info.ModTime.IsZero() {
		if info, err = c.store.Head(ctx, key); err != nil {
			return time.Time{}, fmt.Errorf("gc: read clock probe %s: %w", key, err)
		}
	}
	if info.ModTime.IsZero() {
		return time.Time{}, fmt.Errorf("%w: probe %s", ErrNoStoreClock, key)
	}
	return info.ModTime, nil
}
