package sim

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/watch"
)

// memberHub gives half the group members a watch hub of their own process (the other half
// poll on their own), with random intervals, and a notifier that tells the hub of the
// stream's commits as a committer's watch would, but unreliably: each change is published
// at once, late (after later ones, out of order), or never, as a tail or as the manifest
// itself. Lost and late notifications may cost a member time, never a record. stop ends the
// notifier and closes the hub; hub is nil for a member that polls.
func (h *harness) memberHub(ctx context.Context, name string, ps *procStore) (hub *watch.Hub, stop func()) {
	// A randomness of its own, so that the runs of a seed without hubs stay as they were.
	f := fnv.New64a()
	f.Write([]byte(name))
	r := rand.New(rand.NewPCG(h.sc.Seed, f.Sum64()))
	if r.IntN(2) == 0 {
		return nil, func() {}
	}
	cfg := watch.DefaultConfig()
	cfg.MinInterval = time.Duration(10+r.IntN(100)) * time.Millisecond
	cfg.MaxInterval = cfg.MinInterval * time.Duration(1+r.IntN(20))
	cfg.ErrorAttempts = 1 + r.IntN(10)
	hub, err := watch.New(cfg)
	if err != nil {
		h.violate("%s: watch hub: %v", name, err)
		return nil, func() {}
	}
	h.event("%s follows through a hub (polls every %v to %v)", name, cfg.MinInterval, cfg.MaxInterval)
	nctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	nr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	go func() {
		defer wg.Done()
		h.notify(nctx, hub, ps, nr)
	}()
	return hub, func() {
		cancel()
		wg.Wait()
		hub.Close()
	}
}

// notify watches the stream's manifest in the base store (no faults, no cost that matters)
// and publishes its changes to hub for ps's followers, unreliably (see memberHub).
func (h *harness) notify(ctx context.Context, hub *watch.Hub, ps *procStore, r *rand.Rand) {
	key := h.sc.Stream.ManifestKey()
	var last uint64
	var late []func()
	for ctx.Err() == nil {
		sleep(ctx, time.Duration(2+r.IntN(40))*time.Millisecond)
		data, info, err := objectstore.ReadAll(ctx, h.base, key)
		if err != nil || len(data) == 0 {
			continue
		}
		st, err := manifest.Decode(key, data)
		if err != nil || st.WriteCounter <= last {
			continue
		}
		last = st.WriteCounter
		snap := &manifest.Snapshot{State: st, Version: info.Version}
		tail := st.Tail.SeqNum
		publish := func() { hub.PublishTail(ps, key, tail) }
		if r.IntN(2) == 0 {
			publish = func() { hub.Publish(ps, key, snap) }
		}
		switch r.IntN(3) {
		case 0:
			publish()
		case 1:
			late = append(late, publish)
		} // else lost
		for len(late) > 0 && r.IntN(3) == 0 {
			k := r.IntN(len(late))
			late[k]()
			late = append(late[:k], late[k+1:]...)
		}
	}
}
