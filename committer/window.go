package committer

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"time"

	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// jpending is a request waiting for the next window.
type jpending struct {
	pending
	js *jstream
}

// windowLoop is the journal committer's one writer: it takes every request queued while the
// previous window was written (after the first, up to Config.Window more), up to
// maxWindowRequests requests and maxWindowBytes of carried bytes, writes them as one window,
// and answers them once it is durable. One window is in flight at a time, so every window
// before an answered one is durable too.
func (c *Committer) windowLoop() {
	defer c.wg.Done()
	defer close(c.jstopped)
	var next *jpending // the request that did not fit in the last window: it starts this one
	for {
		var batch []*jpending
		bytes := 0
		add := func(pr *jpending) {
			n := carriedBytes(pr.req)
			if len(batch) > 0 && (len(batch) >= maxWindowRequests || bytes+n > maxWindowBytes) {
				next = pr
				return
			}
			batch, bytes = append(batch, pr), bytes+n
		}
		if pr := next; pr != nil {
			next = nil
			add(pr)
		} else {
			select {
			case pr := <-c.jqueue:
				add(pr)
			case <-c.ctx.Done():
				c.drainJournal()
				return
			}
		}
		var wait <-chan time.Time
		var timer *time.Timer
		if c.cfg.Window > 0 {
			timer = time.NewTimer(c.cfg.Window)
			wait = timer.C
		}
	collect:
		for next == nil {
			select {
			case pr := <-c.jqueue:
				add(pr)
				continue
			default:
			}
			if wait == nil {
				break
			}
			select {
			case pr := <-c.jqueue:
				add(pr)
			case <-wait:
				break collect
			case <-c.ctx.Done():
				break collect
			}
		}
		if timer != nil {
			timer.Stop()
		}
		c.commitWindow(batch)
	}
}

// Bounds of one window: the requests beyond them wait for the next.
const (
	maxWindowRequests = 4096
	maxWindowBytes    = 8 << 20 // of carried batch bytes
)

// carriedBytes is the bytes req's batches carry into a window.
func carriedBytes(req *wire.Request) int {
	n := 0
	for i := range req.Batches {
		n += len(req.Batches[i].Data)
	}
	return n
}

// drainJournal answers the requests still queued at Close; none was written.
func (c *Committer) drainJournal() {
	for {
		select {
		case pr := <-c.jqueue:
			pr.done <- &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "committer closed"}}
		default:
			return
		}
	}
}

// section is one stream's part of the window being built.
type section struct {
	js       *jstream
	prs      []*jpending
	answers  []*wire.Response
	first    manifest.Position // the tail before the window
	carried  []int             // indices in js.st.Entries of entries whose bytes ride in the window
	data     [][]byte          // their bytes
	delta    *manifest.Delta
	deltaLen int
	size     int               // bytes of the section
	tail     manifest.Position // the tail after the window
	gen      [16]byte          // the stream's generation
}

// commitWindow applies batch to the streams' working states, writes the window, and answers.
func (c *Committer) commitWindow(batch []*jpending) {
	c.jmu.Lock()
	jid, num := c.jid, c.next
	key := journal.Key(jid, num)
	var order []*section
	by := map[*jstream]*section{}
	for _, pr := range batch {
		js := pr.js
		if js.state != roleHeld || js.jid != jid {
			pr.done <- &wire.Response{Error: &wire.Error{Code: codeRetake, Message: "the stream's role was given up"}}
			continue
		}
		if err := pr.ctx.Err(); err != nil || time.Since(pr.at) > c.cfg.RequestTTL {
			pr.done <- &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "request abandoned before its window"}}
			continue
		}
		sec := by[js]
		if sec == nil {
			sec = &section{js: js, first: js.st.Tail}
			js.st.Entries = js.st.Entries[:0]
			by[js] = sec
			order = append(order, sec)
		}
		req := pr.req
		var data [][]byte
		if hasCarried(req) {
			r2 := *req
			r2.Batches = append([]wire.Batch(nil), req.Batches...)
			data = make([][]byte, len(r2.Batches))
			for i := range r2.Batches {
				if b := &r2.Batches[i]; b.Carried() {
					data[i] = b.Data
					b.Key, b.ObjectBytes = key, uint64(len(b.Data))
				}
			}
			req = &r2
		}
		before := len(js.st.Entries)
		ans := apply(js.st, req)
		if ans.Error == nil && data != nil {
			// Apply added one entry per batch that was not a duplicate, in order.
			e := before
			for i := range ans.Batches {
				if ans.Batches[i].Duplicate {
					continue
				}
				if data[i] != nil {
					sec.carried = append(sec.carried, e)
					sec.data = append(sec.data, data[i])
				}
				e++
			}
		}
		sec.prs = append(sec.prs, pr)
		sec.answers = append(sec.answers, ans)
	}
	var sections []journal.Section
	var written []*section
	for _, sec := range order {
		st := sec.js.st
		sec.tail, sec.gen = st.Tail, st.Generation
		if len(st.Entries) == 0 {
			continue // every request refused or a duplicate: nothing to write
		}
		d := &manifest.Delta{Entries: append([]manifest.Entry(nil), st.Entries...), Tail: st.Tail,
			FencingToken: st.FencingToken, TrimPoint: st.TrimPoint, Producers: map[string]manifest.ProducerState{}}
		var rel uint64
		for i, e := range sec.carried {
			d.Entries[e].Offset, d.Entries[e].Length = rel, uint64(len(sec.data[i]))
			rel += uint64(len(sec.data[i]))
		}
		for _, e := range d.Entries {
			d.Producers[e.ProducerID] = st.Producers[e.ProducerID]
		}
		enc := manifest.EncodeDelta(d, key)
		sec.delta, sec.deltaLen, sec.size = d, len(enc), len(enc)+int(rel)
		sec.js.inflight++
		sections = append(sections, journal.Section{Manifest: sec.js.path, Generation: st.Generation,
			FirstSeq: sec.first.SeqNum, NextSeq: st.Tail.SeqNum, Data: enc, More: sec.data})
		written = append(written, sec)
	}
	c.jmu.Unlock()

	var err error
	if len(sections) > 0 {
		// The window is not written again once its oldest request is older than RequestTTL
		// (as the stream loop's dropGone): no window lands long after its producers sent it.
		var oldest time.Time
		for _, sec := range written {
			for _, pr := range sec.prs {
				if oldest.IsZero() || pr.at.Before(oldest) {
					oldest = pr.at
				}
			}
		}
		err = c.writeWindow(jid, num, key, sections, written, oldest.Add(c.cfg.RequestTTL))
	}

	c.jmu.Lock()
	now := time.Now()
	for _, sec := range written {
		sec.js.inflight--
	}
	if err == nil && len(sections) > 0 {
		c.next = num + 1
		for _, sec := range written {
			js := sec.js
			if len(js.unfolded) == 0 {
				js.since = now
			}
			js.unfolded = append(js.unfolded, folding{num: num, delta: sec.delta, bytes: sec.size})
		}
	}
	c.jcond.Broadcast()
	if err != nil {
		c.resetLocked()
	}
	c.jmu.Unlock()

	role := c.vouch() // no manifest write renews the role: the answers do
	for _, sec := range order {
		for i, pr := range sec.prs {
			ans := sec.answers[i]
			if ans.Error == nil {
				switch {
				case err == nil:
					ans.Tail, ans.Role = sec.tail, role
				case errors.Is(err, journal.ErrFenced) && anyDuplicate(ans):
					// A duplicate is committed (by an earlier window, durable and before the
					// fence): "not committed" would be false of it.
					ans = &wire.Response{Error: &wire.Error{Code: wire.CodeStorage, Message: "journal fenced; the request repeats committed batches: " + err.Error()}}
				case errors.Is(err, journal.ErrFenced):
					ans = &wire.Response{Error: &wire.Error{Code: wire.CodeRoleHeld, Message: "not committed: this committer's journal was fenced by another writer"}}
				default:
					ans = &wire.Response{Error: &wire.Error{Code: wire.CodeStorage, Message: "journal window write: " + err.Error()}}
				}
			}
			c.m.requestSeconds.Observe(time.Since(pr.at).Seconds())
			pr.done <- ans
		}
	}
	if err == nil {
		c.published(jid, num, written)
	}
}

// writeWindow encodes the sections as window num of journal jid, fixes the carried entries'
// offsets to where they landed, and writes the window create-only.
func (c *Committer) writeWindow(jid journal.ID, num uint64, key string, sections []journal.Section, written []*section, retryBy time.Time) error {
	h := journal.Header{Kind: journal.KindWindow, Journal: jid, Number: num, WrittenAtMs: uint64(max(c.cfg.Now().UnixMilli(), 0))}
	if _, err := rand.Read(h.Nonce[:]); err != nil {
		return err
	}
	obj, err := journal.Encode(h, sections)
	if err != nil {
		return err
	}
	_, rows, err := journal.DecodeIndex(key, obj, int64(len(obj)))
	if err != nil {
		return err
	}
	for i, sec := range written {
		base := rows[i].Offset + uint64(sec.deltaLen)
		for _, e := range sec.carried {
			sec.delta.Entries[e].Offset += base
		}
	}
	ctx := objectstore.WithPurpose(c.ctx, objectstore.PurposeCommit)
	start := time.Now()
	err = journal.Write(ctx, &windowAttempts{Store: c.cfg.Store, backoff: c.cfg.Backoff, retryBy: retryBy}, h, obj)
	c.m.writeSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		c.m.writeErrors.Inc()
		c.cfg.Logger.Warn("journal window write failed; starting a new journal", "window", key, "err", err)
		return err
	}
	c.m.writes.Inc()
	c.m.requestsPerWrite.Observe(float64(len(sections)))
	return nil
}

// errWindowTTL: a window write's outcome stayed unknown until its requests were older than
// RequestTTL; it is not tried again.
var errWindowTTL = errors.New("committer: the window's requests passed their ttl; not written again")

// windowAttempts is the store one window is written through (journal.Write puts again after
// an unknown outcome that left nothing): each attempt after the first waits the backoff, and
// none starts after retryBy.
type windowAttempts struct {
	objectstore.Store
	backoff  manifest.Backoff
	retryBy  time.Time
	attempts int
}

func (w *windowAttempts) Put(ctx context.Context, key string, r io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if w.attempts > 0 {
		if err := w.backoff.Sleep(ctx, w.attempts-1); err != nil {
			return objectstore.ObjectInfo{}, err
		}
		if time.Now().After(w.retryBy) {
			return objectstore.ObjectInfo{}, errWindowTTL
		}
	}
	w.attempts++
	return w.Store.Put(ctx, key, r, size, cond)
}

// anyDuplicate reports whether ans answers a batch as a duplicate (committed earlier).
func anyDuplicate(ans *wire.Response) bool {
	for i := range ans.Batches {
		if ans.Batches[i].Duplicate {
			return true
		}
	}
	return false
}

// hasCarried reports whether any batch of req carries its bytes.
func hasCarried(req *wire.Request) bool {
	for i := range req.Batches {
		if req.Batches[i].Carried() {
			return true
		}
	}
	return false
}

// resetLocked starts a new journal after a window failed or was fenced (under jmu): every
// stream loses its role here and takes it again at its next request, sealing the old
// journal (which folds its durable windows into the manifest) first.
func (c *Committer) resetLocked() {
	c.jid, c.next = newJournalID(), 0
	for _, js := range c.jstreams {
		if js.state != roleNone {
			js.state, js.st, js.unfolded, js.snap = roleNone, nil, nil, nil
		}
	}
	c.m.journalResets.Inc()
}

// newJournalID is a random journal id.
func newJournalID() journal.ID {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return journal.ID(v)
}
