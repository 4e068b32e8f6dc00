package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// This file is the one place that sets the engine's, committer's and collector's config
// fields from the daemon's Config: when those packages change their fields, only it changes.

// watchHub is the hub of the engine's readers' manifest watchers. They follow a stream
// whose role another daemon holds through that daemon's watch endpoint, with the token the
// daemons of one deployment share; never this daemon's own (self, its committer's URL),
// whose commits are published to the hub. No two daemons can watch through each other: each
// hub holds at least the last manifest its daemon wrote, which names it as the committer, so
// the daemon a chain of watches ends at polls the store.
//
// With a journal committer (holder, set once the committer exists), a followed stream's
// role is held by this daemon, which publishes its commits: its watcher polls rarely.
func watchHub(cfg *Config, self string, holder *lateHolder, log *slog.Logger, reg prometheus.Registerer) (*watch.Hub, error) {
	wcfg := watch.DefaultConfig()
	wcfg.Logger, wcfg.Registerer = log, reg
	wcfg.Remote.Enabled = true
	wcfg.Remote.Committer.Token = cfg.AuthToken
	wcfg.Remote.Self = self
	if cfg.Journal {
		wcfg.Holder = holder
	}
	return watch.New(wcfg)
}

// lateHolder is the hub's watch.Holder: the daemon's committer, which is made after the hub.
// Until it is set, nothing is held.
type lateHolder struct {
	mu sync.Mutex
	c  *committer.Committer
}

func (l *lateHolder) set(c *committer.Committer) {
	l.mu.Lock()
	l.c = c
	l.mu.Unlock()
}

func (l *lateHolder) get() *committer.Committer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c
}

func (l *lateHolder) Hold(ctx context.Context, key string) bool {
	c := l.get()
	return c != nil && c.Hold(ctx, key)
}

func (l *lateHolder) Holds(key string) bool {
	c := l.get()
	return c != nil && c.Holds(key)
}

// journalCheckpointInterval is how often a journal committer brings a stream with new
// commits up to date in its manifest: no longer tied to the lease, which it does not renew
// by writes (other daemons probe it before taking its streams).
const journalCheckpointInterval = 30 * time.Second

// committerConfig is the committer's config: a fresh id, the advertised URL, the lease; the
// manifests it writes are handed to the readers of hub (no store read to wake them). Its
// probes of other daemons' committers carry token, as the daemon's producers' requests do.
func committerConfig(store objectstore.Store, hub *watch.Hub, advertise string, lease time.Duration, journal bool, token string, log *slog.Logger, reg prometheus.Registerer) committer.Config {
	ccfg := committer.DefaultConfig()
	ccfg.Lease = lease
	ccfg.Journal = journal
	if journal {
		ccfg.CheckpointInterval = journalCheckpointInterval
	}
	ccfg.Transport = &commitclient.HTTP{Token: token}
	ccfg.Store = objectstore.WithDefaultPurpose(watch.PublishingStore(store, hub), objectstore.PurposeCommit)
	if journal {
		// Windows are not manifests: each stream's section is handed to its watcher, which
		// folds it into its view with no store request, and a stream
		// followed here keeps its role while idle.
		ccfg.OnCommit = func(wc committer.WindowCommit) {
			hub.PublishWindow(store, wc.Key, wc.Generation, wc.Journal, wc.Window, wc.Delta)
		}
		ccfg.Followed = func(key string) bool { return hub.Followed(store, key) }
	}
	ccfg.ID, ccfg.URL = "serve-"+randomHex(8), advertise
	ccfg.Logger, ccfg.Registerer = log, reg
	return ccfg
}

// engineConfig is the engine's config; com is the daemon's committer (nil without one) at
// the URL advertise, hub the readers' watchers (shared with the committer).
func engineConfig(cfg *Config, store objectstore.Store, hub *watch.Hub, com *committer.Committer, advertise string, log *slog.Logger, reg prometheus.Registerer) engine.Config {
	ecfg := engine.DefaultConfig()
	ecfg.Store = store
	ecfg.Watch = hub
	ecfg.Logger = log
	ecfg.Registerer = reg
	ecfg.LagInterval = cfg.LagInterval
	ecfg.Producer.FlushInterval = cfg.FlushInterval
	ecfg.Producer.DeliveryTimeout = cfg.DeliveryTimeout
	// GC safety: a producer never commits an upload older than half the grace period.
	ecfg.Producer.CommitDeadline = commitDeadline(cfg)
	if com != nil {
		// Its own streams' commits go to it in process; others' to the daemon holding the
		// role, with the token the daemons of one deployment share.
		ecfg.Producer.Committer.URL, ecfg.Producer.Committer.Local = advertise, com
	}
	ecfg.Producer.Committer.Token = cfg.AuthToken // for other daemons' committers
	return ecfg
}

// gcConfig is the collector's config.
func gcConfig(cfg *Config, log *slog.Logger, reg prometheus.Registerer) gc.Config {
	gcfg := gc.DefaultConfig()
	gcfg.Interval = cfg.GCInterval
	gcfg.GracePeriod = cfg.GCGracePeriod
	gcfg.CommitDeadline = commitDeadline(cfg)
	gcfg.Logger = log
	gcfg.Registerer = reg
	return gcfg
}

// gcStore is the collector's view of store: its requests are labelled gc.
func gcStore(store objectstore.Store) objectstore.Store {
	return objectstore.WithDefaultPurpose(store, objectstore.PurposeGC)
}

// commitDeadline is the daemon's producers' commit deadline: half the grace period, so that
// no upload is committed after a collector could have deleted it.
func commitDeadline(cfg *Config) time.Duration { return cfg.GCGracePeriod / 2 }

// gcStreams lists what the collector visits in a round: every stream, then every deleted
// stream that left objects behind (catalog.GoneStreams), which a pass sweeps. (`sluice gc`
// lists the same.)
func gcStreams(store objectstore.Store) gc.StreamLister {
	return func(ctx context.Context) ([]stream.Stream, error) {
		all, err := catalog.AllStreams(ctx, store)
		if err != nil {
			return nil, err
		}
		gone, err := catalog.GoneStreams(ctx, store)
		if err != nil {
			return nil, err
		}
		return append(all, gone...), nil
	}
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}
