package committer

import (
	"context"
	"time"

	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
)

// Hold takes the role of the stream whose manifest is key for this committer's journal, as a
// commit request would, without committing anything (package watch asks it for the streams
// its process follows, so that their commits pass through here and are published to it). It
// reports whether the role is held here afterwards: false without journal mode, when another
// live committer holds it, or when the manifest cannot be read or written.
func (c *Committer) Hold(ctx context.Context, key string) bool {
	if !c.cfg.Journal {
		return false
	}
	js, err := c.jstream(key)
	if err != nil {
		return false
	}
	defer c.done(js)
	return c.hold(ctx, js, "") == nil
}

// Holds reports whether this committer holds the role of the stream whose manifest is key
// for its current journal, so that every commit of the stream passes through it.
func (c *Committer) Holds(key string) bool {
	if !c.cfg.Journal {
		return false
	}
	c.jmu.Lock()
	defer c.jmu.Unlock()
	js := c.jstreams[key]
	return js != nil && js.state == roleHeld && js.jid == c.jid
}

// followed reports whether the stream at key has followers in the process
// (Config.Followed), so that its role is kept while it is idle.
func (c *Committer) followed(key string) bool {
	return c.cfg.Followed != nil && c.cfg.Followed(key)
}

// WindowCommit is what one durable window committed to one stream (Config.OnCommit).
type WindowCommit struct {
	Key        string          // the stream's manifest key
	Generation [16]byte        // the stream's generation
	Journal    journal.ID      // the window's journal
	Window     uint64          // the window's number
	Delta      *manifest.Delta // the stream's section: its journal fields after the window (shared: do not modify)
}

// published tells Config.OnCommit of every stream window num of jid committed to.
func (c *Committer) published(jid journal.ID, num uint64, written []*section) {
	if c.cfg.OnCommit == nil {
		return
	}
	for _, sec := range written {
		c.cfg.OnCommit(WindowCommit{Key: sec.js.path, Generation: sec.gen, Journal: jid, Window: num, Delta: sec.delta})
	}
}

// idleFor reports whether js had no request for the idle timeout and may retire (under jmu).
func (c *Committer) idleFor(js *jstream, now time.Time) bool {
	return now.Sub(js.last) > c.cfg.IdleTimeout && js.users == 0 && !c.followed(js.path)
}
