package committer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// Config configures a Committer. Start from DefaultConfig.
type Config struct {
	// Store holds the streams the committer commits to. Required.
	Store objectstore.Store
	// ID names the committer in the manifests' role; unique per process. Required.
	ID string
	// URL is where it takes requests (its Handler is served at URL + Path). Required.
	URL string
	// Lease is how long each write holds the role. Default 10 s.
	Lease time.Duration
	// RequestTTL: a request is not written in an attempt that starts later than this after it
	// arrived (it is answered as failed, with wire.CodeStorage after an attempt whose outcome is
	// unknown). Default 10 s, the producers' wait for an answer.
	RequestTTL time.Duration
	// MaxWriteRetries bounds the writes one group of requests is tried with before its
	// requests are answered with wire.CodeStorage. Default 20.
	MaxWriteRetries int
	// IdleTimeout: a stream's loop that took no request for this long ends (the next request
	// starts another). It must exceed Lease, so the role has lapsed by then. Default 1 min.
	IdleTimeout time.Duration
	// Backoff between retries of manifest reads and writes.
	Backoff manifest.Backoff
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the committer's metrics. Default nil: not registered.
	Registerer prometheus.Registerer
	// Now is the clock of the role's lease. Default time.Now.
	Now func() time.Time

	// Journal: commit through a journal (docs/journal.md): each commit window is one
	// create-only object holding the commits of every stream, acknowledged once it is
	// durable, and each stream's manifest is brought up to date by checkpoints. Batches may
	// then carry their bytes (wire.Batch.Data) from producers in this process. Default false:
	// one manifest write per stream per commit group.
	Journal bool
	// Window: after a window's first request, wait this long for more before writing it
	// (requests that arrive while a window is written always join the next). Journal only.
	// Default 0: no wait.
	Window time.Duration
	// CheckpointInterval: a stream's manifest shows its commits at most this long after they
	// were acknowledged. Journal only. Default 4 s. (A journal committer does not renew its
	// roles by writes: its answers and probes vouch for them, and a would-be taker asks it
	// before sealing its journal.)
	CheckpointInterval time.Duration
	// CheckpointWindows: a stream is also checkpointed once this many windows hold commits
	// its manifest does not show. Journal only. Default 256.
	CheckpointWindows int
	// OnCommit, if set, is told what every durable window committed to each stream (a
	// daemon hands it to its followers: watch.Hub.PublishWindow). It must not block.
	// Journal only.
	OnCommit func(WindowCommit)
	// Followed, if set, says whether the stream at key has followers in the process: such a
	// stream keeps its role while idle, so its commits keep passing through here (Hold).
	// Journal only.
	Followed func(key string) bool
	// Transport carries probes to other committers (is the holder of a lapsed role still
	// alive?) before this one seals their journals. Journal only. Default nil:
	// commitclient.HTTP without a token.
	Transport commitclient.Transport
}

// DefaultConfig returns the defaults; Store, ID and URL are left empty.
func DefaultConfig() Config {
	return Config{Lease: 10 * time.Second, CheckpointInterval: 4 * time.Second, CheckpointWindows: 256, RequestTTL: 10 * time.Second, MaxWriteRetries: 20, IdleTimeout: time.Minute, Backoff: manifest.DefaultBackoff(),
		Logger: slog.New(slog.DiscardHandler), Now: time.Now}
}

// ErrInvalidConfig is matched by every problem New reports.
var ErrInvalidConfig = errors.New("committer: invalid config")

func (c *Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Store == nil {
		bad("store is required")
	}
	if c.ID == "" {
		bad("id is required")
	}
	if c.URL == "" {
		bad("url is required")
	}
	if c.Lease <= 0 {
		bad("lease %v must be positive", c.Lease)
	}
	if c.RequestTTL <= 0 {
		bad("request ttl %v must be positive", c.RequestTTL)
	}
	if c.MaxWriteRetries <= 0 {
		bad("max write retries %d must be positive", c.MaxWriteRetries)
	}
	if c.IdleTimeout <= c.Lease {
		bad("idle timeout %v must exceed the lease %v", c.IdleTimeout, c.Lease)
	}
	if err := c.Backoff.Validate(); err != nil {
		bad("%v", err)
	}
	if c.Logger == nil {
		bad("logger is nil")
	}
	if c.Now == nil {
		bad("clock is nil")
	}
	if c.Journal {
		if c.Window < 0 {
			bad("window %v must not be negative", c.Window)
		}
		if c.CheckpointInterval <= 0 {
			bad("checkpoint interval %v must be positive", c.CheckpointInterval)
		}
		if c.CheckpointWindows <= 0 {
			bad("checkpoint windows %d must be positive", c.CheckpointWindows)
		}
	}
	return errors.Join(errs...)
}

// Committer commits other processes' batches to the streams of its store: one loop per
// stream applies every request that arrived while the previous write was in flight in one
// manifest write (group commit across processes), taking or renewing the stream's role in
// that same write. Safe for concurrent use; Close stops its loops.
type Committer struct {
	cfg    Config
	m      *metrics
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	streams map[string]*stream

	// Journal mode (Config.Journal): the current journal, its next window number and the
	// streams, guarded by jmu; jcond tells checkpoints that a window settled.
	jmu      sync.Mutex
	jclosed  bool
	jcond    *sync.Cond
	jid      journal.ID
	next     uint64
	jstreams map[string]*jstream
	jqueue   chan *jpending
	jstopped chan struct{} // closed when the window loop ends
}

// New returns a committer; it starts a stream's loop at the stream's first request.
func New(cfg Config) (*Committer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	if cfg.Transport == nil {
		cfg.Transport = &commitclient.HTTP{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Committer{cfg: cfg, m: m, ctx: ctx, cancel: cancel, streams: map[string]*stream{}}
	if cfg.Journal {
		c.jcond = sync.NewCond(&c.jmu)
		c.jid, c.jstreams, c.jqueue = newJournalID(), map[string]*jstream{}, make(chan *jpending, maxWindowRequests)
		c.jstopped = make(chan struct{})
		c.wg.Add(2)
		go c.windowLoop()
		go c.checkpointLoop()
	}
	return c, nil
}

// Journal reports whether the committer commits through a journal (Config.Journal), and so
// takes batches that carry their bytes.
func (c *Committer) Journal() bool { return c.cfg.Journal }

// URL is where the committer takes requests (Config.URL). A commitclient.Config whose
// Local is c answers the requests for it in process.
func (c *Committer) URL() string { return c.cfg.URL }

// Commit commits req and returns its answer. ctx bounds the wait: a request whose ctx ends
// before its write starts is not written (then nothing of it is in the stream); one whose
// write started is answered by that write.
func (c *Committer) Commit(ctx context.Context, req *wire.Request) *wire.Response {
	if err := req.Validate(); err != nil {
		return &wire.Response{Error: &wire.Error{Code: wire.CodeInvalid, Message: err.Error()}}
	}
	if req.IsProbe() {
		return c.answerProbe(req)
	}
	if c.cfg.Journal {
		return c.commitJournal(ctx, req)
	}
	if hasCarried(req) {
		return &wire.Response{Error: &wire.Error{Code: wire.CodeInvalid, Message: "batches that carry their bytes need a journal committer"}}
	}
	s, err := c.stream(req.ManifestPath)
	if err != nil {
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: err.Error()}}
	}
	pr := &pending{ctx: ctx, req: req, done: make(chan *wire.Response, 1), at: time.Now()}
	queued := c.enqueue(ctx, s, pr)
	if queued != nil {
		return queued
	}
	return <-pr.done // every request queued is answered, also on Close
}

// enqueue hands pr to s's loop; an answer if it could not.
func (c *Committer) enqueue(ctx context.Context, s *stream, pr *pending) *wire.Response {
	defer func() {
		c.mu.Lock()
		s.users--
		c.mu.Unlock()
	}()
	select {
	case s.queue <- pr:
		return nil
	case <-ctx.Done():
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: ctx.Err().Error()}}
	case <-c.ctx.Done():
		return &wire.Response{Error: &wire.Error{Code: wire.CodeStopping, Message: "committer closed"}}
	}
}

// retire removes s, whose loop has been idle, unless a request is on its way to it.
func (c *Committer) retire(s *stream) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.users > 0 || len(s.queue) > 0 {
		return false
	}
	delete(c.streams, s.path)
	c.m.streams.Dec()
	return true
}

func (c *Committer) stream(path string) (*stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("committer closed")
	}
	s := c.streams[path]
	if s == nil {
		s = &stream{c: c, path: path, m: manifest.Open(c.cfg.Store, path), queue: make(chan *pending, 1024), pace: manifest.NewPacer(c.cfg.Store, nil)}
		c.streams[path] = s
		c.m.streams.Inc()
		c.wg.Add(1)
		go s.loop()
	}
	s.users++ // until enqueue is done: the loop does not retire meanwhile
	return s, nil
}

// Close stops the stream loops (each answers what it holds) and gives up the roles it holds,
// so that writers commit directly at once rather than when the lease lapses.
func (c *Committer) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	streams := make([]*stream, 0, len(c.streams))
	for _, s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	c.jmu.Lock()
	c.jclosed = true
	c.jmu.Unlock()
	c.cancel()
	c.wg.Wait()
	var errs []error
	if c.cfg.Journal {
		if err := c.closeJournal(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range streams {
		if err := s.release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	c.m.unregister(c.cfg.Registerer)
	return errors.Join(errs...)
}
