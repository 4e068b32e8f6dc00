package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// ErrCrashed is what every operation of a crashed process's store returns: the process is
// gone, nothing it asks for reaches the store any more.
var ErrCrashed = errors.New("sim: process crashed")

// ledger wraps the bottom store (below the fault injection, so it sees only what really
// happened) and records every delete that took effect, and checks the size bound of every
// manifest write that took effect.
type ledger struct {
	objectstore.Store
	manifestPath string

	mu         sync.Mutex
	deleted    map[string]time.Time
	maxEntries int
	maxRefs    int // most segment references of one level
	bad        []error
	writes     int
}

func newLedger(inner objectstore.Store, manifestPath string) *ledger {
	return &ledger{Store: inner, manifestPath: manifestPath, deleted: map[string]time.Time{}}
}

func (l *ledger) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if key != l.manifestPath {
		return l.Store.Put(ctx, key, body, size, cond)
	}
	data, err := io.ReadAll(io.LimitReader(body, size+1))
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := l.Store.Put(ctx, key, bytes.NewReader(data), int64(len(data)), cond)
	if err == nil && len(data) > 0 {
		l.checkManifest(data)
	}
	return info, err
}

// checkManifest records the manifest's size against its bound (manifest.MaxRecentEntries
// entries, manifest.SegmentFanout references per level).
func (l *ledger) checkManifest(data []byte) {
	st, err := manifest.Decode(l.manifestPath, data)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	if err != nil {
		l.bad = append(l.bad, fmt.Errorf("a manifest write that took effect does not decode: %w", err))
		return
	}
	l.maxEntries = max(l.maxEntries, len(st.Entries))
	perLevel := map[uint8]int{}
	for _, r := range st.Segments {
		perLevel[r.Level]++
		l.maxRefs = max(l.maxRefs, perLevel[r.Level])
	}
	if len(st.Entries) > manifest.MaxRecentEntries {
		l.bad = append(l.bad, fmt.Errorf("manifest write %d holds %d entries, bound is %d", st.WriteCounter, len(st.Entries), manifest.MaxRecentEntries))
	}
	for lvl, n := range perLevel {
		if n > manifest.SegmentFanout {
			l.bad = append(l.bad, fmt.Errorf("manifest write %d holds %d level-%d segment references, bound is %d", st.WriteCounter, n, lvl, manifest.SegmentFanout))
		}
	}
}

func (l *ledger) Delete(ctx context.Context, key string) error {
	_, headErr := l.Store.Head(ctx, key)
	err := l.Store.Delete(ctx, key)
	if err == nil && headErr == nil {
		l.mu.Lock()
		l.deleted[key] = time.Now()
		l.mu.Unlock()
	}
	return err
}

func (l *ledger) deletedKeys() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]time.Time, len(l.deleted))
	for k, v := range l.deleted {
		out[k] = v
	}
	return out
}

// crashMode says how a process dies at its chosen operation.
type crashMode int

const (
	crashBefore   crashMode = iota // the operation never reaches the store
	crashAfter                     // the operation takes effect, the process dies before the answer
	crashInFlight                  // a write is sent but lands later, after the process is gone
)

func (m crashMode) String() string {
	return [...]string{"before", "after", "in-flight"}[m]
}

// procStore is one process's view of the shared store. It models what a process can do to
// the store: while alive, its requests pass through (some of its writes are slow: they
// return ErrOutcomeUnknown at once and land later, which reorders them with later
// requests); once crashed, nothing it does reaches the store, but writes it had in flight
// still land.
type procStore struct {
	inner objectstore.Store
	h     *harness
	name  string

	mu      sync.Mutex
	rng     *rand.Rand
	dead    bool
	ops     int
	killAt  int // crash at this operation (1-based); 0: never by count
	mode    crashMode
	killed  chan struct{}
	lateP   float64
	lateMax time.Duration
}

func (h *harness) newProcStore(name string, rng *rand.Rand, killAt int, mode crashMode, lateP float64) *procStore {
	return &procStore{
		inner: h.shared, h: h, name: name, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())),
		killAt: killAt, mode: mode, killed: make(chan struct{}), lateP: lateP, lateMax: h.sc.LateMax,
	}
}

// kill crashes the process now (idempotent).
func (s *procStore) kill(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked(why)
}

func (s *procStore) killLocked(why string) {
	if s.dead {
		return
	}
	s.dead = true
	s.h.event("%s crashed (%s)", s.name, why)
	close(s.killed)
}

func (s *procStore) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

func crashed(op objectstore.Op, key string) error {
	return objectstore.NewOpError(string(op), key, nil, ErrCrashed)
}

// step decides the fate of one operation: run it (false, nil), or refuse it (the error).
// For a crash at this operation it returns the mode.
func (s *procStore) step(op objectstore.Op, key string) (crashNow bool, mode crashMode, late bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return false, 0, false, crashed(op, key)
	}
	s.ops++
	if s.ops == s.killAt {
		mode = s.mode
		if mode == crashInFlight && op != objectstore.OpPut {
			mode = crashAfter
		}
		if mode == crashBefore {
			s.killLocked(fmt.Sprintf("before %s %s", op, key))
			return false, 0, false, crashed(op, key)
		}
		return true, mode, false, nil
	}
	late = op == objectstore.OpPut && s.rng.Float64() < s.lateP
	return false, 0, late, nil
}

// lateDelay draws how long a slow write takes to land.
func (s *procStore) lateDelay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.rng.Int64N(int64(s.lateMax)) + 1)
}

func (s *procStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	crash, mode, _, err := s.step(objectstore.OpGet, key)
	if err != nil {
		return nil, err
	}
	obj, err := s.inner.Get(ctx, key, opts)
	if crash {
		if err == nil {
			obj.Body.Close()
		}
		s.kill(fmt.Sprintf("%s get %s", mode, key))
		return nil, crashed(objectstore.OpGet, key)
	}
	return obj, err
}

func (s *procStore) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	crash, mode, _, err := s.step(objectstore.OpHead, key)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := s.inner.Head(ctx, key)
	if crash {
		s.kill(fmt.Sprintf("%s head %s", mode, key))
		return objectstore.ObjectInfo{}, crashed(objectstore.OpHead, key)
	}
	return info, err
}

func (s *procStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	crash, mode, late, err := s.step(objectstore.OpPut, key)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	if late || (crash && mode == crashInFlight) {
		// The request is sent; it lands later, whatever becomes of the sender.
		data, err := io.ReadAll(io.LimitReader(body, size))
		if err != nil {
			return objectstore.ObjectInfo{}, err
		}
		s.h.landLater(s.name, key, data, cond, s.lateDelay())
		if crash {
			s.kill(fmt.Sprintf("in-flight put %s", key))
			return objectstore.ObjectInfo{}, crashed(objectstore.OpPut, key)
		}
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, errors.New("sim: slow write, answer not awaited"))
	}
	info, err := s.inner.Put(ctx, key, body, size, cond)
	if crash {
		s.kill(fmt.Sprintf("after put %s (%v)", key, err))
		return objectstore.ObjectInfo{}, crashed(objectstore.OpPut, key)
	}
	return info, err
}

func (s *procStore) Delete(ctx context.Context, key string) error {
	crash, mode, _, err := s.step(objectstore.OpDelete, key)
	if err != nil {
		return err
	}
	err = s.inner.Delete(ctx, key)
	if crash {
		s.kill(fmt.Sprintf("%s delete %s", mode, key))
		return crashed(objectstore.OpDelete, key)
	}
	return err
}

func (s *procStore) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	crash, mode, _, err := s.step(objectstore.OpList, prefix)
	if err != nil {
		return objectstore.ListPage{}, err
	}
	page, err := s.inner.List(ctx, prefix, startAfter, limit)
	if crash {
		s.kill(fmt.Sprintf("%s list %s", mode, prefix))
		return objectstore.ListPage{}, crashed(objectstore.OpList, prefix)
	}
	return page, err
}

func (s *procStore) Close() error { return nil }

// landLater performs a write after d, detached from its sender (tracked by the harness so
// the run waits for it).
func (h *harness) landLater(who, key string, data []byte, cond objectstore.PutCondition, d time.Duration) {
	// Producers' late writes are waited for before the consumer's target is set; others' (a
	// consumer's epoch or checkpoint writes) may start while that wait runs, so they have a
	// WaitGroup of their own, waited for only once every process has stopped.
	late := &h.lateOther
	if strings.HasPrefix(who, "p") {
		late = &h.late
	}
	late.Add(1)
	h.lateCount.Add(1)
	go func() {
		defer late.Done()
		time.Sleep(d)
		_, err := h.shared.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), cond)
		if strings.HasSuffix(key, "/manifest") || key == h.sc.Stream.ManifestKey() {
			h.event("late manifest write of %s landed after %v: %v", who, d, err)
		}
	}()
}
