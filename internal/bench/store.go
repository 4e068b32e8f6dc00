package bench

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// StoreTarget runs in this process on a store: each writer is a producer.Producer on the
// stream, the reader a consumer.Reader woken by the producers' acks (a consumer.Notifier,
// as in the daemon). Every request to the store is counted.
type StoreTarget struct {
	store    objectstore.Store // instrumented
	raw      objectstore.Store
	basin    string
	st       stream.Stream
	producer producer.Config
	log      *slog.Logger
	notifier *consumer.Notifier
	ops      opCounter
	created  bool
}

// NewStoreTarget returns a target for the stream name of basin ("" for the root
// namespace) in s, whose producers start from cfg (its store, paths, CreateStream and
// Logger are set here). The caller closes s after the run.
func NewStoreTarget(s objectstore.Store, basin, name string, cfg producer.Config, log *slog.Logger) (*StoreTarget, error) {
	st, err := stream.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &StoreTarget{raw: s, basin: basin, st: st, producer: cfg, log: log, notifier: consumer.NewNotifier()}
	t.ops.n = map[string]int64{}
	t.store = objectstore.Instrument(s, &t.ops)
	return t, nil
}

// opCounter counts store operations by kind and purpose (RequestKey).
type opCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *opCounter) ObserveOp(e objectstore.OpEvent) {
	c.mu.Lock()
	c.n[RequestKey(string(e.Op), string(e.Purpose))]++
	c.mu.Unlock()
}

// Create creates the stream with the default configuration.
func (t *StoreTarget) Create(ctx context.Context) error {
	if _, err := manifest.Open(t.store, t.st.ManifestKey()).Create(ctx, manifest.DefaultConfig(), time.Now()); err != nil {
		return err
	}
	t.created = true
	return nil
}

// Delete deletes the stream and its objects, if Create made it.
func (t *StoreTarget) Delete(ctx context.Context) error {
	if !t.created {
		return nil
	}
	cfg := engine.DefaultConfig()
	cfg.Store, cfg.Logger = t.raw, t.log
	en, err := engine.New(cfg)
	if err != nil {
		return err
	}
	defer en.Close(context.WithoutCancel(ctx))
	if _, err := en.DeleteStream(ctx, t.basin, t.st.Name()); err != nil && !errors.Is(err, manifest.ErrNotExist) {
		return err
	}
	t.created = false
	return nil
}

// Requests returns the store requests counted so far.
func (t *StoreTarget) Requests(context.Context) (map[string]int64, bool) {
	t.ops.mu.Lock()
	defer t.ops.mu.Unlock()
	m := make(map[string]int64, len(t.ops.n))
	for k, v := range t.ops.n {
		m[k] = v
	}
	return m, true
}

// NewWriter opens a producer on the stream.
func (t *StoreTarget) NewWriter(ctx context.Context, _ int) (Writer, error) {
	cfg := t.producer
	cfg.ObjectStore = objectstore.WithDefaultPurpose(t.store, objectstore.PurposeCommit)
	cfg.Stream = t.st
	cfg.CreateStream = false
	cfg.Logger = t.log
	p, err := producer.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &storeWriter{p: p, t: t}, nil
}

type storeWriter struct {
	p *producer.Producer
	t *StoreTarget
}

func (w *storeWriter) BatchesRecords() bool { return true }

// Send submits a single record (the producer's client-side batching, Submit) or appends
// several as one append.
func (w *storeWriter) Send(ctx context.Context, recs []batchfmt.Record) (Pending, error) {
	if len(recs) == 1 {
		rt, err := w.p.Submit(ctx, recs[0])
		if err != nil {
			return nil, err
		}
		return storePending{wait: func(ctx context.Context) error { _, err := rt.Wait(ctx); return err }, t: w.t}, nil
	}
	tk, err := w.p.Append(ctx, batchfmt.AppendInput{Records: recs})
	if err != nil {
		return nil, err
	}
	return storePending{wait: func(ctx context.Context) error { _, err := tk.Wait(ctx); return err }, t: w.t}, nil
}

func (w *storeWriter) Close(ctx context.Context) error { return w.p.Close(ctx) }

type storePending struct {
	wait func(context.Context) error
	t    *StoreTarget
}

// Wait waits for the ack and wakes the reader, as the daemon does after each ack.
func (p storePending) Wait(ctx context.Context) (time.Time, error) {
	if err := p.wait(ctx); err != nil {
		return time.Time{}, err
	}
	at := time.Now()
	p.t.notifier.Notify(p.t.st.ManifestKey())
	return at, nil
}

// Follow opens a following read session from seq_num 0.
func (t *StoreTarget) Follow(ctx context.Context) (Follower, error) {
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = t.store
	cfg.Stream = t.st
	cfg.Notifier, cfg.Logger = t.notifier, t.log
	r, err := consumer.NewReader(cfg)
	if err != nil {
		return nil, err
	}
	s, err := r.Open(ctx, consumer.ReadRequest{Start: consumer.AtSeqNum(0), Follow: true, SkipCommands: true})
	if err != nil {
		return nil, err
	}
	return storeFollower{s}, nil
}

type storeFollower struct{ s *consumer.Session }

func (f storeFollower) Next(ctx context.Context) ([][]batchfmt.Header, error) {
	b, err := f.s.Next(ctx)
	if err != nil {
		return nil, err
	}
	hs := make([][]batchfmt.Header, len(b.Records))
	for i := range b.Records {
		hs[i] = b.Records[i].Headers
	}
	return hs, nil
}

func (f storeFollower) Close() { _ = f.s.Close() }
