package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// crashPlan draws whether and how a process instance will crash.
func (h *harness) crashPlan(r *rand.Rand, crashesSoFar int) (killAt int, mode crashMode, after time.Duration) {
	if crashesSoFar >= h.sc.MaxCrashes || r.Float64() >= h.sc.Crashes {
		return 0, 0, 0
	}
	if r.IntN(3) == 0 {
		return 0, 0, time.Duration(r.Int64N(int64(h.sc.MaxCrashAt)) + 1)
	}
	return 1 + r.IntN(h.sc.MaxCrashOp), crashMode(r.IntN(3)), 0
}

// startProc makes a process: its store and a context that ends when it crashes.
func (h *harness) startProc(ctx context.Context, name string, r *rand.Rand, crashesSoFar int) (*procStore, context.Context, func()) {
	killAt, mode, after := h.crashPlan(r, crashesSoFar)
	ps := h.newProcStore(name, r, killAt, mode, h.sc.LateProb)
	pctx, cancel := context.WithCancel(ctx)
	var timer *time.Timer
	if after > 0 {
		timer = time.AfterFunc(after, func() { ps.kill(fmt.Sprintf("at %v", after)) })
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-ps.killed:
			cancel()
		case <-pctx.Done():
		}
	}()
	if killAt > 0 || after > 0 {
		h.event("%s starts; crash plan: op %d %s, time %v", name, killAt, mode, after)
	} else {
		h.event("%s starts", name)
	}
	return ps, pctx, func() {
		if timer != nil {
			timer.Stop()
		}
		cancel()
		<-watchDone
	}
}

func (h *harness) producerConfig(store objectstore.Store, id string) producer.Config {
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.Stream = h.sc.Stream
	cfg.FlushInterval = h.sc.FlushInterval
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = producer.FlushEveryAppend
	}
	cfg.UploadConcurrency = h.sc.UploadConcurrency
	cfg.MaxGroupBatches = h.sc.MaxGroupBatches
	cfg.MaxBufferedInputs = max(h.sc.Pipeline, 1)
	cfg.CommitDeadline = h.sc.Grace / 2
	cfg.Backoff = manifest.Backoff{Initial: 5 * time.Millisecond, Max: 500 * time.Millisecond, Multiplier: 2}
	cfg.ProducerID = id
	cfg.StreamConfig.QueueMode = h.sc.Queue
	cfg.DeliveryTimeout = h.sc.DeliveryTimeout
	if h.sc.Committers > 0 {
		cfg.Committer = commitclient.Config{URL: committerURL(0), Transport: h.net}
	}
	return cfg
}
