package watch

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Sentinel errors.
var (
	// ErrClosed: the hub or the subscription was closed.
	ErrClosed = errors.New("watch: closed")
	// ErrStoreNotComparable: Subscribe was given a store that cannot key a map (a struct
	// value holding a slice, say). Pass a pointer.
	ErrStoreNotComparable = errors.New("watch: store is not comparable")
)

// Hub keeps one watcher per (store, manifest key) that someone in the process follows. Its
// methods are safe for concurrent use. The zero value is not usable: call New.
type Hub struct {
	cfg    Config
	m      *metrics
	remote *remote // nil unless Config.Remote.Enabled

	mu       sync.Mutex
	watchers map[watchKey]*watcher
	closed   bool
	quit     chan struct{} // closed by Close
	wg       sync.WaitGroup
}

type watchKey struct {
	store objectstore.Store
	key   string
}

// New validates cfg and returns a hub. It starts no goroutine until the first Subscribe.
func New(cfg Config) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("watch: register metrics: %w", err)
	}
	h := &Hub{cfg: cfg, m: m, watchers: map[watchKey]*watcher{}, quit: make(chan struct{})}
	if cfg.Remote.Enabled {
		h.remote = newRemote(cfg.Remote, cfg.ServeHold)
	}
	return h, nil
}

// Config returns the hub's configuration.
func (h *Hub) Config() Config { return h.cfg }

func keyable(store objectstore.Store) bool {
	return store != nil && reflect.ValueOf(store).Comparable()
}

// Subscribe follows the manifest at key in store: it starts the stream's watcher if it is the
// first subscriber. Close the subscription when done with it; the last Close stops the
// watcher.
func (h *Hub) Subscribe(store objectstore.Store, key string) (*Subscription, error) {
	if !keyable(store) {
		return nil, fmt.Errorf("%w: %T", ErrStoreNotComparable, store)
	}
	if err := objectstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("watch: manifest key: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	k := watchKey{store, key}
	w, ok := h.watchers[k]
	if !ok {
		w = newWatcher(h, store, key)
		h.watchers[k] = w
		h.m.watchers.Inc()
		h.wg.Add(1)
		go w.run()
		if h.remote != nil {
			h.wg.Add(1)
			go w.watchRemote()
		}
	}
	w.subs++
	h.m.subscribers.Inc()
	return &Subscription{h: h, w: w}, nil
}

// release drops one subscriber of w, and w itself with the last one.
func (h *Hub) release(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.subs--
	h.m.subscribers.Dec()
	if w.subs == 0 {
		if h.watchers[w.id()] == w {
			delete(h.watchers, w.id())
		}
		w.stop()
	}
}

// lookup returns the watcher of (store, key), or nil.
func (h *Hub) lookup(store objectstore.Store, key string) *watcher {
	if !keyable(store) {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchers[watchKey{store, key}]
}

// Followed reports whether a stream of store is followed in this process (it has a watcher).
func (h *Hub) Followed(store objectstore.Store, key string) bool { return h.lookup(store, key) != nil }

// Publish tells the hub that the manifest at key in store was written as snap (by this
// process, which must not modify snap.State afterwards). If the stream is followed and snap is
// newer than what its watcher holds (same generation, higher write counter), the followers
// are woken with it and no store request is made; a manifest of another generation makes the
// watcher poll at once instead. It does not block.
func (h *Hub) Publish(store objectstore.Store, key string, snap *manifest.Snapshot) {
	if snap == nil || snap.State == nil {
		return
	}
	if w := h.lookup(store, key); w != nil {
		w.publish(snap)
	}
}

// PublishTail tells the hub that the stream's tail has reached tail (a seq_num: every record
// below it is committed). If the stream is followed and its watcher holds an older tail, the
// watcher polls at once (one conditional GET for all the followers). It does not block.
func (h *Hub) PublishTail(store objectstore.Store, key string, tail uint64) {
	if w := h.lookup(store, key); w != nil {
		w.publishTail(tail)
	}
}

// PublishWindow tells the hub that window num of journal id committed delta (its section)
// to the stream at key in store, of generation gen. A follower's view that names that
// journal, at or below num, and ends where delta starts takes it with no store request; any
// other view (a publish lost before it, another journal or generation) makes the watcher
// poll at once instead. It does not block.
func (h *Hub) PublishWindow(store objectstore.Store, key string, gen [16]byte, id journal.ID, num uint64, delta *manifest.Delta) {
	if w := h.lookup(store, key); w != nil {
		w.publishWindow(gen, id, num, delta)
	}
}

// Close stops every watcher and waits for them. Subscriptions then fail with ErrClosed;
// closing them remains allowed.
func (h *Hub) Close() error {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.quit)
		for _, w := range h.watchers {
			w.stop()
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}
