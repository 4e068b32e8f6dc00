package committer_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
)

// limitedStore states a per-key write limit (as a cloud store does), records when each
// manifest write reached it, and refuses with ErrThrottled every throttleEvery-th one and,
// with enforce, any that comes sooner than 1/perSecond after the last one it took.
type limitedStore struct {
	objectstore.Store
	perSecond     float64
	throttleEvery int
	enforce       bool

	mu        sync.Mutex
	writes    []time.Time
	throttled int
}

func (s *limitedStore) KeyWritesPerSecond() float64 { return s.perSecond }

func (s *limitedStore) Put(ctx context.Context, key string, body io.Reader, size int64, c objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if key == path {
		s.mu.Lock()
		s.writes = append(s.writes, time.Now())
		n := len(s.writes)
		throttle := s.throttleEvery > 0 && n%s.throttleEvery == 0
		if s.enforce && n > 1 && s.writes[n-1].Sub(s.writes[n-2]) < time.Duration(float64(time.Second)/s.perSecond) {
			throttle = true
			s.writes = s.writes[:n-1] // the store keeps its pace from the last write it took
		}
		if throttle {
			s.throttled++
		}
		s.mu.Unlock()
		if throttle {
			return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrThrottled, fmt.Errorf("503 SlowDown"))
		}
	}
	return s.Store.Put(ctx, key, body, size, c)
}

// closestWrites returns the shortest time between two manifest writes.
func (s *limitedStore) closestWrites() (time.Duration, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	least := time.Duration(1 << 62)
	for i := 1; i < len(s.writes); i++ {
		least = min(least, s.writes[i].Sub(s.writes[i-1]))
	}
	return least, len(s.writes)
}

// TestCommitterPacesToTheStoresLimit: with a store that takes 20 writes a second to one key,
// producers through the committer see every append acked, the manifest writes are at least
// 50 ms apart, and the commits that arrived meanwhile share them.
func TestCommitterPacesToTheStoresLimit(t *testing.T) {
	store := &limitedStore{Store: newStream(t), perSecond: 20}
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL = store, "c1", "http://c1.invalid"
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	acks := runProducers(t, "p", 4, 30, func(int) producer.Config {
		pc := producerConfig(store, cfg.URL)
		pc.Committer.Local = c
		return pc
	})
	verify(t, store, acks)
	least, writes := store.closestWrites()
	if writes < 2 {
		t.Fatalf("%d manifest writes: the test shows nothing", writes)
	}
	if least < 50*time.Millisecond {
		t.Fatalf("two manifest writes %v apart, under the store's limit of 20 a second", least)
	}
	if appends := len(acks); writes >= appends {
		t.Fatalf("%d writes for %d appends: the pacing was not absorbed by group commit", writes, appends)
	}
}

// TestThrottledWriteIsRetriedNotALostRace: a manifest write the store refuses for its rate
// is retried after a backoff; every append is acked once, and the refusals are counted as
// throttling, not as failed writes.
func TestThrottledWriteIsRetriedNotALostRace(t *testing.T) {
	store := &limitedStore{Store: newStream(t), throttleEvery: 3}
	reg := prometheus.NewRegistry()
	cfg := committer.DefaultConfig()
	cfg.Store, cfg.ID, cfg.URL, cfg.Registerer = store, "c1", "http://c1.invalid", reg
	cfg.Backoff = manifest.Backoff{Initial: 100 * time.Microsecond, Max: 5 * time.Millisecond, Multiplier: 2}
	c, err := committer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	acks := runProducers(t, "p", 3, 20, func(int) producer.Config {
		pc := producerConfig(store, cfg.URL)
		pc.Committer.Local = c
		return pc
	})
	verify(t, store, acks)
	throttled := counter(t, reg, "sluice_committer_manifest_writes_throttled_total")
	if throttled == 0 || int(throttled) != store.throttled {
		t.Fatalf("throttled counter %v, the store refused %d writes", throttled, store.throttled)
	}
	if failed := counter(t, reg, "sluice_committer_manifest_write_errors_total"); failed != 0 {
		t.Fatalf("%v throttled writes counted as failures", failed)
	}
}

// TestDirectProducerPacesToTheStoresLimit: a producer committing by itself keeps to the
// store's limit too, and its appends share the writes. (Several direct writers of one stream
// each keep to it alone: pacing them together is what the committer is for.)
func TestDirectProducerPacesToTheStoresLimit(t *testing.T) {
	store := &limitedStore{Store: newStream(t), perSecond: 20, throttleEvery: 5}
	acks := runProducers(t, "d", 1, 30, func(int) producer.Config { return producerConfig(store, "") })
	verify(t, store, acks)
	least, writes := store.closestWrites()
	if writes < 2 || least < 50*time.Millisecond {
		t.Fatalf("%d manifest writes, closest %v apart: want at least 50 ms (20 a second)", writes, least)
	}
}
