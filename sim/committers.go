package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/manifest"
)

// committerURL is the simulated address of committer slot i.
func committerURL(i int) string { return fmt.Sprintf("http://committer%d.sim", i) }

// runCommitter runs committer slot i: instances crashed and restarted like the other
// processes, until stop is closed.
func (h *harness) runCommitter(ctx context.Context, i int, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(h.sc.Seed, 0xc0117+uint64(i)))
	url := committerURL(i)
	crashes := 0
	for inst := 0; ; inst++ {
		// Named "p...": its writes commit producers' batches (see landLater).
		name := fmt.Sprintf("pc%d.%d", i, inst)
		ps, _, stopProc := h.startProc(ctx, name, r, crashes)
		cfg := committer.DefaultConfig()
		cfg.Store, cfg.ID, cfg.URL, cfg.Lease = ps, name, url, h.sc.CommitterLease
		cfg.Journal, cfg.CheckpointInterval = h.sc.Journal, h.sc.CommitterLease/2
		cfg.Transport = h.net // probes of other committers cross the simulated network
		cfg.Backoff = manifest.Backoff{Initial: 5 * time.Millisecond, Max: 500 * time.Millisecond, Multiplier: 2}
		c, err := committer.New(cfg)
		if err != nil {
			h.violate("%s: %v", name, err)
			stopProc()
			return
		}
		h.net.set(url, c)
		stopped := false
		select {
		case <-ps.killed:
			crashes++
		case <-stop:
			stopped = true
		case <-ctx.Done():
			stopped = true
		}
		h.net.set(url, nil)
		c.Close(context.Background())
		stopProc()
		if stopped {
			return
		}
		sleep(ctx, time.Duration(r.IntN(500))*time.Millisecond)
	}
}

// simNet carries commit requests to the live committer at a URL, losing requests and
// replies and delaying some past the role's lease, as a network might.
type simNet struct {
	h  *harness
	mu sync.Mutex
	r  *rand.Rand
	at map[string]*committer.Committer
	// committed counts answers that committed a request; lost, requests or replies lost.
	committed, lost int
}

func (n *simNet) set(url string, c *committer.Committer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c == nil {
		delete(n.at, url)
	} else {
		n.at[url] = c
	}
}

// Commit implements commitclient.Transport.
func (n *simNet) Commit(ctx context.Context, url string, req *wire.Request) (*wire.Response, error) {
	sc := &n.h.sc
	n.mu.Lock()
	c := n.at[url]
	roll, pause := n.r.Float64(), n.r.Float64() < sc.Pauses
	n.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%w: no committer at %s", commitclient.ErrUnreachable, url)
	}
	if roll < sc.LostRequests {
		n.count(&n.lost)
		sleep(ctx, 10*time.Millisecond)
		return nil, errors.New("sim: commit request lost")
	}
	if pause {
		sleep(ctx, sc.CommitterLease+time.Millisecond) // the role may change hands meanwhile
	}
	resp := c.Commit(ctx, req)
	if resp.Error == nil && !req.IsProbe() {
		n.count(&n.committed)
	}
	if roll < sc.LostRequests+sc.LostReplies {
		n.count(&n.lost)
		return nil, errors.New("sim: commit reply lost")
	}
	return resp, nil
}

func (n *simNet) count(c *int) {
	n.mu.Lock()
	*c++
	n.mu.Unlock()
}
