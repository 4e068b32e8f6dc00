package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// runConsumer runs group members one after another until one has read to the final tail.
func (h *harness) runConsumer(ctx context.Context) {
	r := rand.New(rand.NewPCG(h.sc.Seed, 0xc0))
	crashes := 0
	// The group joins once a producer has created the stream (the harness looks without
	// faults; streams are never deleted here).
	for {
		if _, _, err := objectstore.ReadAll(ctx, h.base, h.sc.Stream.ManifestKey()); err == nil {
			break
		}
		select {
		case <-h.targetSet:
			if _, _, err := objectstore.ReadAll(ctx, h.base, h.sc.Stream.ManifestKey()); err != nil {
				h.violate("consumer: the stream was never created: %v", err)
				return
			}
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Zombies: members that are replaced while still alive (a paused process, a partition):
	// they go on reading and acknowledging until they learn they were fenced.
	var zombies sync.WaitGroup
	zctx, stopZombies := context.WithCancel(ctx)
	defer func() {
		stopZombies()
		zombies.Wait()
	}()
	for inst := 0; ctx.Err() == nil; inst++ {
		if inst > 200 {
			h.violate("consumer: 200 members started and none reached the tail")
			return
		}
		name := fmt.Sprintf("c.%d", inst)
		if crashes < h.sc.MaxCrashes && r.Float64() < h.sc.Crashes/3 {
			crashes++
			name += "-zombie"
			ps, pctx, stop := h.startProc(zctx, name, r, h.sc.MaxCrashes)
			zr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
			joined := make(chan struct{})
			zombies.Add(1)
			go func() {
				defer zombies.Done()
				defer stop()
				h.runMember(zctx, pctx, name, ps, zr, true, joined)
			}()
			<-joined
			h.mu.Lock()
			h.zombies++
			h.mu.Unlock()
			sleep(ctx, time.Duration(r.IntN(300))*time.Millisecond)
			continue
		}
		ps, pctx, stop := h.startProc(ctx, name, r, crashes)
		done := h.runMember(ctx, pctx, name, ps, r, false, nil)
		stop()
		if ps.isDead() {
			crashes++
			h.mu.Lock()
			h.crashes++
			h.mu.Unlock()
		}
		if done {
			return
		}
	}
}

func (h *harness) consumerConfig(store objectstore.Store, r *rand.Rand) consumer.GroupConfig {
	cfg := consumer.DefaultGroupConfig()
	cfg.ObjectStore = store
	cfg.Stream = h.sc.Stream
	cfg.Group = "g"
	cfg.ReadAheadDepth = 1 + r.IntN(4)
	cfg.PollInterval = time.Duration(10+r.IntN(100)) * time.Millisecond
	cfg.MaxBatchRecords = 1 + r.IntN(20)
	cfg.AckInterval = time.Duration(5+r.IntN(500)) * time.Millisecond
	cfg.AckRecords = 1 + r.IntN(30)
	cfg.Backoff = manifest.Backoff{Initial: 5 * time.Millisecond, Max: 300 * time.Millisecond, Multiplier: 2}
	cfg.FetchAttempts = 10
	if h.sc.Committers > 0 {
		cfg.Committer.Transport = h.net // checkpoints go to the committer the manifest names
	}
	return cfg
}

// runMember runs one member; it reports whether the group has read everything.
// A zombie member is expected to be fenced; joined (if not nil) is closed once Open returned.
func (h *harness) runMember(ctx, pctx context.Context, name string, ps *procStore, r *rand.Rand, zombie bool, joined chan struct{}) bool {
	hub, stopHub := h.memberHub(pctx, name, ps) // see watch.go
	defer stopHub()
	cfg := h.consumerConfig(ps, r)
	cfg.Watch = hub
	c, err := consumer.Open(pctx, cfg, consumer.GroupOptions{})
	if joined != nil {
		close(joined)
	}
	if err != nil {
		if isCorruption(err) {
			h.violate("%s: open: %v", name, err)
			return true
		}
		if !ps.isDead() && ctx.Err() == nil {
			h.event("%s: open failed: %v", name, err)
			sleep(ctx, 50*time.Millisecond)
		}
		return false
	}
	_, start := c.Checkpoint()
	m := &member{start: start, ackedThru: start}
	h.mu.Lock()
	h.members = append(h.members, m)
	h.mu.Unlock()
	h.event("%s joined at checkpoint %d (epoch %d)", name, start, c.Epoch())
	finished := false
	// Next blocks at the tail; once the producers are done, a member at the tail must stop
	// waiting, so its context ends when the target is known.
	nctx, ncancel := context.WithCancel(pctx)
	defer ncancel()
	targetKnown := func() (uint64, bool) {
		select {
		case <-h.targetSet:
			return h.target, true
		default:
			return 0, false
		}
	}
	watchDone := make(chan struct{})
	defer func() {
		ncancel()
		<-watchDone
	}()
	go func() {
		defer close(watchDone)
		select {
		case <-h.targetSet:
			ncancel()
		case <-nctx.Done():
		}
	}()
	next := start
read:
	for {
		if t, ok := targetKnown(); ok && next >= t {
			finished = true
			break read
		}
		ctxNext := nctx
		if _, ok := targetKnown(); ok {
			ctxNext = pctx // the target is known: read on until it is reached
		}
		b, err := c.Next(ctxNext)
		if err != nil {
			switch {
			case isCorruption(err):
				h.violate("%s: read: %v", name, err)
				finished = true
			case errors.Is(err, consumer.ErrFenced) && zombie:
				h.event("%s: fenced: %v", name, err)
			case errors.Is(err, consumer.ErrFenced):
				h.violate("%s: fenced although no other member is alive: %v", name, err)
			case ps.isDead() || ctx.Err() != nil:
			case nctx.Err() != nil:
				// The target became known while waiting: restart cleanly.
			default:
				h.event("%s: read failed: %v", name, err)
			}
			break read
		}
		for _, rec := range b.Records {
			if rec.SeqNum != next {
				h.violate("%s: delivered seq_num %d, expected %d", name, rec.SeqNum, next)
			}
			next = rec.SeqNum + 1
			m.recs = append(m.recs, consumer.SequencedRecord{SeqNum: rec.SeqNum, Timestamp: rec.Timestamp, Body: append([]byte(nil), rec.Body...)})
		}
		if len(b.Records) > 0 && r.IntN(5) != 0 {
			last := b.Records[len(b.Records)-1].SeqNum
			if err := c.AckThrough(last); err != nil {
				if !ps.isDead() {
					h.event("%s: ack %d: %v", name, last, err)
				}
			} else {
				m.ackedThru = last + 1
			}
		}
	}
	if ps.isDead() {
		dead, cancel := context.WithCancel(context.Background())
		cancel()
		c.Close(dead)
		return false
	}
	if err := c.Close(pctx); err != nil && !ps.isDead() {
		if errors.Is(err, consumer.ErrFenced) && !zombie {
			h.violate("%s: close: fenced although no other member is alive: %v", name, err)
		} else {
			h.event("%s: close: %v", name, err)
		}
	}
	return finished
}
