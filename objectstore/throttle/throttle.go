// Package throttle wraps an objectstore.Store with a cloud's limit on writes to one key, as
// Google Cloud Storage enforces about one write per second to one object name: a put that
// comes sooner after the last accepted write to its key than the limit allows is refused
// with objectstore.ErrThrottled and applies nothing, as GCS's 429 does, and each put may
// take a fixed extra latency first. The store states its limit (objectstore.WriteLimiter),
// so that writers that pace themselves can be tested and measured on a local store: a
// benchmark of the committer's pacing, a simulation of a throttling cloud.
//
// Reads, listings and deletes pass through untouched. Only accepted puts count toward the
// limit; a refused one does not move the window.
package throttle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// ErrThrottledHere is the cause of the refusals this package makes (they match
// objectstore.ErrThrottled).
var ErrThrottledHere = errors.New("throttle: write to the key sooner than its limit allows")

// Config configures New.
type Config struct {
	// KeyWritesPerSecond is the limit of accepted writes to one key per second, > 0.
	KeyWritesPerSecond float64
	// WriteLatency is added before every put (0: none); not negative.
	WriteLatency time.Duration
	// Now is the clock (nil: time.Now), for tests that step it.
	Now func() time.Time
}

// Store is a throttling objectstore.Store; see the package documentation.
type Store struct {
	inner     objectstore.Store
	interval  time.Duration
	latency   time.Duration
	now       func() time.Time
	mu        sync.Mutex
	last      map[string]time.Time // the last accepted write of each key
	throttled atomic.Int64
	accepted  atomic.Int64
}

// New wraps inner. It reports every problem of cfg at once.
func New(inner objectstore.Store, cfg Config) (*Store, error) {
	var problems []error
	if inner == nil {
		problems = append(problems, errors.New("throttle: nil store"))
	}
	if !(cfg.KeyWritesPerSecond > 0) {
		problems = append(problems, fmt.Errorf("throttle: KeyWritesPerSecond %v must be positive", cfg.KeyWritesPerSecond))
	}
	if cfg.WriteLatency < 0 {
		problems = append(problems, fmt.Errorf("throttle: WriteLatency %v is negative", cfg.WriteLatency))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Store{
		inner:    inner,
		interval: time.Duration(float64(time.Second) / cfg.KeyWritesPerSecond),
		latency:  cfg.WriteLatency,
		now:      now,
		last:     map[string]time.Time{},
	}, nil
}

// KeyWritesPerSecond implements objectstore.WriteLimiter.
func (s *Store) KeyWritesPerSecond() float64 { return float64(time.Second) / float64(s.interval) }

// Unwrap returns the wrapped store.
func (s *Store) Unwrap() objectstore.Store { return s.inner }

// Throttled returns how many puts were refused; Accepted how many were let through.
func (s *Store) Throttled() int64 { return s.throttled.Load() }

// Accepted returns how many puts were let through to the wrapped store.
func (s *Store) Accepted() int64 { return s.accepted.Load() }

// Put implements objectstore.Store.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if s.latency > 0 {
		t := time.NewTimer(s.latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, nil, ctx.Err())
		case <-t.C:
		}
	}
	s.mu.Lock()
	now := s.now()
	if last, ok := s.last[key]; ok && now.Sub(last) < s.interval {
		s.mu.Unlock()
		s.throttled.Add(1)
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrThrottled, ErrThrottledHere)
	}
	s.last[key] = now
	if len(s.last) > 4096 {
		for k, t := range s.last {
			if now.Sub(t) >= s.interval {
				delete(s.last, k)
			}
		}
	}
	s.mu.Unlock()
	s.accepted.Add(1)
	return s.inner.Put(ctx, key, body, size, cond)
}

// Get implements objectstore.Store.
func (s *Store) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	return s.inner.Get(ctx, key, opts)
}

// Head implements objectstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	return s.inner.Head(ctx, key)
}

// Delete implements objectstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error { return s.inner.Delete(ctx, key) }

// List implements objectstore.Store.
func (s *Store) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	return s.inner.List(ctx, prefix, startAfter, limit)
}

// Close implements objectstore.Store.
func (s *Store) Close() error { return s.inner.Close() }
