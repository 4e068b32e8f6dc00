package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/internal/streamcheck"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// streamRecord is a record as the checker's own reader (package streamcheck) sees it.
type streamRecord = streamcheck.Record

// readStream is the checker's reader, independent of package consumer (streamcheck.Read).
var readStream = streamcheck.Read

// finalChecks runs after every process stopped and every late write landed.
func (h *harness) finalChecks() {
	ctx := context.Background()
	h.faults.SetEnabled(false)
	if h.sc.GC {
		// Let every orphan age past the grace period, then collect: what is left must be
		// referenced, and what is referenced must be readable.
		time.Sleep(h.sc.Grace + time.Second)
		for range 2 {
			if _, err := gc.Pass(ctx, h.shared, h.sc.Stream, h.gcConfig()); err != nil {
				h.violate("final gc pass: %v", err)
			}
		}
	}
	if h.sc.afterGC != nil {
		h.sc.afterGC(h)
	}
	recs, st, refs, err := readStream(ctx, h.base, h.sc.Stream.ManifestKey())
	if err != nil {
		h.violate("final read: %v", err)
	}
	for key, when := range h.led.deletedKeys() {
		if refs[key] {
			h.violate("object %s, referenced by the manifest, was deleted at %v", key, when.Sub(h.start))
		}
	}
	h.led.mu.Lock()
	bad := append([]error(nil), h.led.bad...)
	h.led.mu.Unlock()
	for _, e := range bad {
		h.violate("%v", e)
	}
	if err != nil {
		return
	}
	if h.sc.GC {
		h.checkCollected(ctx, refs)
	}
	h.checkStream(recs, st)
	h.checkMembers(recs, st)
}

// checkCollected: after the final passes no unreferenced batch or segment object is left.
func (h *harness) checkCollected(ctx context.Context, refs map[string]bool) {
	for _, prefix := range []string{h.sc.Stream.DataPrefix() + "/", h.sc.Stream.SegmentPrefix()} {
		err := objectstore.ListAll(ctx, h.base, prefix, func(info objectstore.ObjectInfo) error {
			if refs[info.Key] {
				return nil
			}
			if k := h.sc.Stream.Classify(info.Key); k == stream.KeyBatch || k == stream.KeySegment {
				h.violate("unreferenced object %s (modified %v) survived the final collection", info.Key, info.ModTime.Sub(h.start))
			}
			return nil
		})
		if err != nil {
			h.violate("list %s: %v", prefix, err)
		}
	}
}

// checkStream: positions contiguous from 0, timestamps non-decreasing, no record twice,
// nothing that was never appended, and every acked record exactly at its acked position.
func (h *harness) checkStream(recs []streamRecord, st *manifest.State) {
	h.mu.Lock()
	appended, expired := h.appended, h.expired
	acked := append([]ackedAppend(nil), h.acked...)
	h.mu.Unlock()
	// In queue mode the collector may have dropped entries the group consumed: the stream
	// then starts at first, and what was acknowledged below it must have reached the group.
	first := st.Tail.SeqNum - uint64(len(recs))
	if first > 0 && !h.sc.Queue {
		h.violate("the stream starts at %d, but nothing may drop entries", first)
	}
	if g, ok := st.Groups["g"]; first > 0 && (!ok || g.Checkpoint < first) {
		h.violate("entries up to %d dropped, but the group's checkpoint is %d", first, g.Checkpoint)
	}
	delivered := h.deliveredBodies()
	where := make(map[string]int, len(recs))
	var lastTS uint64
	for i, r := range recs {
		if r.Seq != first+uint64(i) {
			h.violate("record %d has seq_num %d, want %d", i, r.Seq, first+uint64(i))
			return
		}
		if r.TS < lastTS {
			h.violate("timestamp went back at seq_num %d: %d < %d", r.Seq, r.TS, lastTS)
		}
		lastTS = r.TS
		if r.Command != "" {
			h.violate("command record %q at %d, none was appended", r.Command, r.Seq)
			continue
		}
		if j, dup := where[r.Body]; dup {
			h.violate("record %q appears twice, at %d and %d", r.Body, j, i)
		}
		where[r.Body] = i
		if !appended[r.Body] {
			h.violate("record %q at %d was never appended", r.Body, i)
		}
		if expired[r.Body] {
			h.violate("record %q at %d is in the stream, but its append failed with ErrDeliveryTimeout", r.Body, i)
		}
	}
	for _, a := range acked {
		if a.ack.End.SeqNum-a.ack.Start.SeqNum != uint64(len(a.bodies)) {
			h.violate("ack [%d, %d) for %d records", a.ack.Start.SeqNum, a.ack.End.SeqNum, len(a.bodies))
			continue
		}
		if a.ack.Tail.SeqNum < a.ack.End.SeqNum {
			h.violate("ack end %d beyond its tail %d", a.ack.End.SeqNum, a.ack.Tail.SeqNum)
		}
		for k, body := range a.bodies {
			i, ok := where[body]
			want := a.ack.Start.SeqNum + uint64(k)
			if want < first {
				if got, seen := delivered[want]; !seen || got != body {
					h.violate("acked record %q at %d was dropped before the group saw it (the group saw %q)", body, want, got)
				}
				continue
			}
			switch {
			case !ok:
				h.violate("acked record %q (ack at %d) is missing", body, want)
			case first+uint64(i) != want:
				h.violate("acked record %q is at %d, its ack says %d", body, first+uint64(i), want)
			case k == 0 && recs[i].TS != a.ack.Start.Timestamp:
				h.violate("record %q: timestamp %d, its ack says %d", body, recs[i].TS, a.ack.Start.Timestamp)
			case k == len(a.bodies)-1 && recs[i].TS != a.ack.End.Timestamp:
				h.violate("record %q: timestamp %d, its ack's end says %d", body, recs[i].TS, a.ack.End.Timestamp)
			}
		}
	}
}

// checkMembers: each member of the group saw every record from the checkpoint it joined at,
// in order, as the stream holds them; checkpoints never went back nor past what was
// acknowledged; and the last member reached the final tail.
func (h *harness) checkMembers(recs []streamRecord, st *manifest.State) {
	if !h.sc.Consumer {
		return
	}
	first := st.Tail.SeqNum - uint64(len(recs))
	// Two members that saw the same seq_num saw the same record.
	saw := map[uint64]string{}
	var differ []string // reported after the lock: violate takes it
	h.mu.Lock()
	for i, m := range h.members {
		for _, r := range m.recs {
			if b, ok := saw[r.SeqNum]; ok && b != string(r.Body) {
				differ = append(differ, fmt.Sprintf("member %d saw %q at %d, an earlier member saw %q", i, r.Body, r.SeqNum, b))
			}
			saw[r.SeqNum] = string(r.Body)
		}
	}
	h.mu.Unlock()
	for _, d := range differ {
		h.violate("%s", d)
	}
	h.mu.Lock()
	members := append([]*member(nil), h.members...)
	h.mu.Unlock()
	var prevStart, acked uint64
	for i, m := range members {
		if m.start < prevStart {
			h.violate("member %d joined at checkpoint %d, below the previous member's %d", i, m.start, prevStart)
		}
		if m.start > acked {
			h.violate("member %d joined at checkpoint %d, beyond every acknowledgement (%d)", i, m.start, acked)
		}
		for k, r := range m.recs {
			want := m.start + uint64(k)
			if r.SeqNum != want {
				h.violate("member %d: record %d has seq_num %d, want %d", i, k, r.SeqNum, want)
				break
			}
			if r.SeqNum >= st.Tail.SeqNum {
				h.violate("member %d: record at %d beyond the final tail %d", i, r.SeqNum, st.Tail.SeqNum)
				break
			}
			if r.SeqNum < first {
				continue // dropped since (queue mode); compared with the other members above
			}
			if s := recs[r.SeqNum-first]; string(r.Body) != s.Body || r.Timestamp != s.TS {
				h.violate("member %d: record %d is (%q, ts %d), the stream holds (%q, ts %d)", i, r.SeqNum, r.Body, r.Timestamp, s.Body, s.TS)
				break
			}
		}
		prevStart = m.start
		acked = max(acked, m.ackedThru)
	}
	if len(members) == 0 {
		h.violate("no consumer member joined")
		return
	}
	last := members[len(members)-1]
	if end := last.start + uint64(len(last.recs)); end != st.Tail.SeqNum {
		h.violate("the last member stopped at %d, the stream ends at %d", end, st.Tail.SeqNum)
	}
}

// deliveredBodies maps every seq_num some group member saw to its body.
func (h *harness) deliveredBodies() map[uint64]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[uint64]string{}
	for _, m := range h.members {
		for _, r := range m.recs {
			out[r.SeqNum] = string(r.Body)
		}
	}
	return out
}
