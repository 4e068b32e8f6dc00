package consumer

import (
	"context"
	"time"
)

// lagTimeout bounds the manifest segment reads of a lag update made by an acknowledgement.
const lagTimeout = 5 * time.Second

// updateLag sets the member's lag from its acknowledged position and the manifest its read
// saw last. The oldest unacknowledged record's timestamp is the tracked one when it was
// delivered (no store request); otherwise oldestUnacked's from the manifest.
func (c *Consumer) updateLag(ctx context.Context) {
	c.lagMu.Lock()
	defer c.lagMu.Unlock()
	if c.lagDone {
		return
	}
	st := c.s.State()
	c.mu.Lock()
	if c.fenced != nil {
		c.mu.Unlock()
		return // the group is someone else's now
	}
	start := max(c.low, st.ReadableStart())
	var records, ts uint64
	known := true
	if tail := st.Tail.SeqNum; start < tail {
		records = tail - start
		ts, known = c.ts.at(start)
	}
	c.mu.Unlock()
	if !known {
		var err error
		if records, ts, err = oldestUnacked(ctx, c.r.index(st), start, nil); err != nil {
			c.r.cfg.Logger.Debug("lag not updated", "group", c.group, "err", err)
			return
		}
	}
	c.lagSrc.set(records, ts)
}

// removeLag removes the member's lag series (a later member of the group in this process
// keeps its own).
func (c *Consumer) removeLag() {
	c.lagMu.Lock()
	defer c.lagMu.Unlock()
	c.lagDone = true
	c.lag.remove(c.stream, c.group, c.lagSrc)
}

// tsTrack remembers the timestamps of a member's delivered records, as runs of equal
// timestamps, until they are acknowledged: so the member knows the age of its oldest
// unacknowledged record without a store request.
type tsTrack struct {
	runs []tsRun // in seq_num order; a run's timestamp holds up to the next run
	end  uint64  // the records from runs[0].seq up to end are tracked
	full bool    // maxTrackedRuns reached: nothing more is tracked until the runs drain
}

type tsRun struct{ seq, ts uint64 }

// maxTrackedRuns bounds a tracker's memory (16 bytes a run).
const maxTrackedRuns = 1 << 16

// add tracks delivered records, which come after every record tracked so far.
func (t *tsTrack) add(recs []SequencedRecord) {
	if len(recs) == 0 || t.full {
		return
	}
	for i := range recs {
		r := &recs[i]
		if n := len(t.runs); n == 0 || t.runs[n-1].ts != r.Timestamp {
			if n >= maxTrackedRuns {
				t.full = true
				return
			}
			t.runs = append(t.runs, tsRun{r.SeqNum, r.Timestamp})
		}
		t.end = r.SeqNum + 1
	}
}

// at returns the timestamp of the delivered record at seq and drops the runs below it: seq
// only grows (it is the acknowledged position).
func (t *tsTrack) at(seq uint64) (uint64, bool) {
	for len(t.runs) > 1 && t.runs[1].seq <= seq {
		t.runs = t.runs[1:]
	}
	if seq >= t.end {
		t.runs, t.full = t.runs[:0], false
		return 0, false
	}
	if len(t.runs) == 0 || seq < t.runs[0].seq {
		return 0, false
	}
	return t.runs[0].ts, true
}
