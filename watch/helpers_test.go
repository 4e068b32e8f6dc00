package watch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/watch"
)

const key = "streams/s/manifest"

// backends are the stores a test runs on: real ones, on this machine.
var backends = []storetest.Backend{{Name: "mem", New: storetest.Mem}, {Name: "file", New: storetest.File}}

// counter counts store requests by purpose and op, and keeps the times of the polls.
type counter struct {
	mu    sync.Mutex
	n     map[string]int
	polls []time.Time
}

func (c *counter) ObserveOp(e objectstore.OpEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[string(e.Purpose)+"/"+string(e.Op)]++
	if e.Purpose == objectstore.PurposePoll {
		c.polls = append(c.polls, time.Now())
	}
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

func (c *counter) pollTimes() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.polls...)
}

// stream is one stream's manifest in a counted store.
type stream struct {
	t     *testing.T
	store objectstore.Store // counted
	c     *counter
	h     *manifest.Handle
}

func newStream(t *testing.T, base objectstore.Store) *stream {
	t.Helper()
	c := &counter{n: map[string]int{}}
	s := objectstore.Instrument(base, c)
	h := manifest.Open(s, key)
	if _, err := h.Create(context.Background(), manifest.DefaultConfig(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return &stream{t: t, store: s, c: c, h: h}
}

// load reads the manifest as a follower opening a read would (not counted as a poll).
func (s *stream) load() *manifest.Snapshot {
	s.t.Helper()
	snap, err := s.h.Load(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	return snap
}

// commit advances the tail by n records, as a commit would, and returns the manifest written.
func (s *stream) commit(n uint64) *manifest.Snapshot {
	s.t.Helper()
	snap, err := s.h.Update(context.Background(), func(st *manifest.State) error {
		st.Tail.SeqNum += n
		return nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return snap
}

func newHub(t *testing.T, mod func(*watch.Config)) *watch.Hub {
	t.Helper()
	cfg := watch.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	h, err := watch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func subscribe(t *testing.T, h *watch.Hub, s objectstore.Store) *watch.Subscription {
	t.Helper()
	sub, err := h.Subscribe(s, key)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}
