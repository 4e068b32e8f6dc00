package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/producer"
)

type pendingAppend struct {
	bodies []string
	t      *producer.Ticket
	// before are the appends of its instance accepted before it and unresolved when it was
	// accepted: if one of them then fails with ErrDeliveryTimeout, so must it.
	before []*pendingAppend
}

// runSlot runs one producer slot: instances until Appends appends were made.
func (h *harness) runSlot(ctx context.Context, slot int) {
	r := rand.New(rand.NewPCG(h.sc.Seed, uint64(slot)+1))
	n, crashes := 0, 0
	for inst := 0; n < h.sc.Appends && ctx.Err() == nil; inst++ {
		if h.sc.FixedIDs && inst > 0 {
			sleep(ctx, h.sc.Grace/2) // the commit deadline: the dead process's writes have landed
		}
		name := fmt.Sprintf("p%d.%d", slot, inst)
		ps, pctx, stop := h.startProc(ctx, name, r, crashes)
		h.mu.Lock()
		h.instances++
		h.mu.Unlock()
		var pending []*pendingAppend
		id := name
		if h.sc.FixedIDs {
			id = fmt.Sprintf("p%d", slot)
		}
		p, err := producer.New(pctx, h.producerConfig(ps, id))
		if err == nil {
			for n < h.sc.Appends && !ps.isDead() {
				in := batchfmt.AppendInput{}
				var bodies []string
				k := 1 + r.IntN(h.sc.MaxRecords)
				for j := range k {
					body := fmt.Sprintf("%s.a%d.r%d", name, n, j)
					rec := batchfmt.Record{Body: []byte(body)}
					if r.Float64() < h.sc.Timestamps {
						rec.HasTimestamp = true
						rec.Timestamp = uint64(max(0, time.Now().UnixMilli()-2000+r.Int64N(3000)))
					}
					in.Records = append(in.Records, rec)
					bodies = append(bodies, body)
				}
				h.mu.Lock()
				for _, b := range bodies {
					h.appended[b] = true
				}
				h.mu.Unlock()
				var t *producer.Ticket
				if h.sc.DeliveryTimeout > 0 {
					since := time.Now()
					if h.sc.SinceMax > 0 {
						since = since.Add(-time.Duration(r.Int64N(int64(h.sc.SinceMax))))
					}
					t, err = p.Append(pctx, in, producer.ReceivedAt(since))
				} else {
					t, err = p.Append(pctx, in)
				}
				if errors.Is(err, producer.ErrDeliveryTimeout) && !ps.isDead() {
					h.event("%s: append %d refused: %v", name, n, err)
					h.expire(bodies)
					n++
					continue
				}
				if err != nil {
					if !ps.isDead() && ctx.Err() == nil {
						h.violate("%s: append %d refused without a crash: %v", name, n, err)
					}
					break
				}
				n++
				pa := &pendingAppend{bodies: bodies, t: t}
				for _, q := range pending {
					select {
					case <-q.t.Done():
					default:
						pa.before = append(pa.before, q)
					}
				}
				pending = append(pending, pa)
				// Keep at most Pipeline appends unacknowledged.
				for unresolved(pending) >= h.sc.Pipeline && !ps.isDead() {
					select {
					case <-firstUnresolved(pending).Done():
					case <-ps.killed:
					case <-ctx.Done():
					}
				}
				if r.IntN(4) == 0 {
					sleep(pctx, time.Duration(r.IntN(50))*time.Millisecond)
				}
			}
			if !ps.isDead() {
				if err := p.Close(pctx); err != nil && !ps.isDead() && ctx.Err() == nil {
					h.violate("%s: Close without a crash failed: %v", name, err)
				}
			}
			if ps.isDead() {
				dead, cancel := context.WithCancel(context.Background())
				cancel()
				p.Close(dead) // reap the goroutines of the crashed process
			}
		} else if errors.Is(err, producer.ErrDeliveryTimeout) {
			h.event("%s: open failed with the delivery timeout: %v", name, err) // allowed
		} else if !ps.isDead() && ctx.Err() == nil {
			h.violate("%s: producer.New failed without a crash: %v", name, err)
		}
		stop()
		if ps.isDead() {
			crashes++
			h.mu.Lock()
			h.crashes++
			h.mu.Unlock()
		}
		for _, pa := range pending {
			select {
			case <-pa.t.Done():
			default:
				h.violate("%s: a ticket is unresolved after Close", name)
				continue
			}
			ack, err := pa.t.Result()
			if err == nil {
				for _, q := range pa.before {
					if _, qerr := q.t.Result(); errors.Is(qerr, producer.ErrDeliveryTimeout) {
						h.violate("%s: append %q committed, but %q, accepted before it, failed after it was accepted: %v", name, pa.bodies[0], q.bodies[0], qerr)
					}
				}
				h.mu.Lock()
				h.acked = append(h.acked, ackedAppend{pa.bodies, ack})
				h.mu.Unlock()
			} else if errors.Is(err, producer.ErrDeliveryTimeout) && h.sc.DeliveryTimeout > 0 && !ps.isDead() {
				// (A crashed process's store answered its last writes with errors whatever
				// they did, so its expiries say nothing; nobody would have seen them.)
				h.event("%s: append %q failed: %v", name, pa.bodies[0], err)
				h.expire(pa.bodies)
			} else if h.sc.Queue && errors.Is(err, producer.ErrPositionsUnavailable) {
				// Committed, but the collector dropped its entry (the group had consumed it)
				// before the producer could read its positions back: allowed in queue mode.
				h.event("%s: append %q committed, positions unavailable", name, pa.bodies[0])
			} else if !ps.isDead() {
				h.violate("%s: append %q failed without a crash: %v", name, pa.bodies[0], err)
			}
		}
	}
}

// expire records the bodies of an append that failed with ErrDeliveryTimeout: they must
// not be in the stream.
func (h *harness) expire(bodies []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range bodies {
		h.expired[b] = true
	}
}

func unresolved(p []*pendingAppend) int {
	n := 0
	for _, a := range p {
		select {
		case <-a.t.Done():
		default:
			n++
		}
	}
	return n
}

func firstUnresolved(p []*pendingAppend) *producer.Ticket {
	for _, a := range p {
		select {
		case <-a.t.Done():
		default:
			return a.t
		}
	}
	return p[len(p)-1].t
}
