package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// storeBackend is the backend of library mode: the store named by --store, directly.
type storeBackend struct {
	e           *libEnv
	followToken string // read --follow's committer token (--committer-token)
}

func (b *storeBackend) close() { b.e.close() }

func (b *storeBackend) createStream(ctx context.Context, name string, cfg manifest.Config) error {
	e := b.e
	st, err := e.locate(name)
	if err != nil {
		return err
	}
	if basin := e.basinName(); basin != "" {
		if err := ensureBasin(ctx, e, basin); err != nil {
			return err
		}
	}
	if _, err := manifest.Open(e.store, st.ManifestKey()).Create(ctx, cfg, time.Now()); err != nil {
		return e.streamErr(name, err)
	}
	e.log.Debug("stream created", "stream", name, "basin", e.basinName())
	return nil
}

func (b *storeBackend) streamConfig(ctx context.Context, name string, change func(*manifest.Config) error) (manifest.Config, error) {
	e := b.e
	if change == nil {
		_, snap, err := e.load(ctx, name)
		if err != nil {
			return manifest.Config{}, err
		}
		return snap.State.Config, nil
	}
	st, err := e.locate(name)
	if err != nil {
		return manifest.Config{}, err
	}
	snap, err := manifest.Open(e.store, st.ManifestKey()).Update(ctx, func(s *manifest.State) error {
		return change(&s.Config)
	})
	if err != nil {
		return manifest.Config{}, e.streamErr(name, err)
	}
	e.log.Debug("stream reconfigured", "stream", name, "basin", e.basinName())
	return snap.State.Config, nil
}

func (b *storeBackend) listStreams(ctx context.Context, prefix, startAfter string, limit int, emit func(s2api.StreamInfo) error) error {
	e := b.e
	basin := e.basinName()
	// One walk of the store, names sorted (paging catalog.ListStreams would walk every
	// stream once per page).
	names, err := catalog.StreamNames(ctx, e.store, basin, prefix)
	if err != nil {
		return fmt.Errorf("listing streams in store %s: %w%s", redactURL(e.g.store), err, storeHint(err))
	}
	n := 0
	for _, name := range names {
		if name <= startAfter || (limit > 0 && n >= limit) {
			continue
		}
		st, _ := stream.Locate(basin, name)
		snap, err := manifest.Open(e.store, st.ManifestKey()).Load(ctx)
		if errors.Is(err, manifest.ErrNotExist) {
			continue // deleted meanwhile (as the API's list skips it)
		}
		if err != nil {
			return e.streamErr(name, err)
		}
		if err := emit(listedStream(name, snap.State)); err != nil {
			return err
		}
		n++
	}
	return nil
}

func (b *storeBackend) deleteStream(ctx context.Context, name string) (*int, error) {
	e := b.e
	if _, _, err := e.load(ctx, name); err != nil {
		return nil, err // with the CLI's own words for a stream that does not exist
	}
	en, err := newEngine(e)
	if err != nil {
		return nil, err
	}
	defer en.Close(context.Background())
	n, err := en.DeleteStream(ctx, e.basinName(), name)
	if err != nil {
		return nil, e.streamErr(name, err)
	}
	e.log.Debug("stream deleted", "stream", name, "basin", e.basinName(), "objects", n)
	return &n, nil
}

// withEngine runs fn with an engine on the store, for the operations the CLI shares with
// the daemon.
func (b *storeBackend) withEngine(fn func(*engine.Engine) error) error {
	en, err := newEngine(b.e)
	if err != nil {
		return err
	}
	defer en.Close(context.Background())
	return fn(en)
}

func (b *storeBackend) createBasin(ctx context.Context, name string) (s2api.BasinInfo, error) {
	var out s2api.BasinInfo
	err := b.withEngine(func(en *engine.Engine) error {
		info, err := en.CreateBasin(ctx, name, nil)
		if err != nil {
			return b.e.basinErr(name, err)
		}
		b.e.log.Debug("basin created", "basin", name)
		out = basinInfo(info)
		return nil
	})
	return out, err
}

func (b *storeBackend) listBasins(ctx context.Context, prefix, startAfter string, limit int, emit func(s2api.BasinInfo) error) error {
	return b.withEngine(func(en *engine.Engine) error {
		for n := 0; limit == 0 || n < limit; {
			page := s2api.MaxListLimit
			if limit > 0 {
				page = min(page, limit-n)
			}
			infos, more, err := en.ListBasins(ctx, prefix, startAfter, page)
			if err != nil {
				return fmt.Errorf("listing basins in store %s: %w%s", redactURL(b.e.g.store), err, storeHint(err))
			}
			for _, info := range infos {
				if err := emit(basinInfo(info)); err != nil {
					return err
				}
				n++
			}
			if !more || len(infos) == 0 {
				return nil
			}
			startAfter = infos[len(infos)-1].Name
		}
		return nil
	})
}

func (b *storeBackend) deleteBasin(ctx context.Context, name string) error {
	return b.withEngine(func(en *engine.Engine) error {
		if err := en.DeleteBasin(ctx, name); err != nil {
			return b.e.basinErr(name, err)
		}
		b.e.log.Debug("basin deleted", "basin", name)
		return nil
	})
}

func (b *storeBackend) tail(ctx context.Context, name string) (positionJSON, error) {
	view, err := b.e.view(ctx, name)
	if err != nil {
		return positionJSON{}, err
	}
	return posJSON(view.Tail), nil
}

func (b *storeBackend) appendSync(ctx context.Context, name string, in batchfmt.AppendInput) (ackJSON, error) {
	e := b.e
	st, err := e.locate(name)
	if err != nil {
		return ackJSON{}, err
	}
	p, err := e.newProducer(ctx, st, false, defaultCLIDeliveryTimeout)
	if err != nil {
		return ackJSON{}, err
	}
	ack, aerr := p.AppendSync(ctx, in)
	cerr := closeProducer(p)
	if aerr != nil {
		return ackJSON{}, e.streamErr(name, appendErr(aerr))
	}
	if cerr != nil {
		return ackJSON{}, e.streamErr(name, cerr)
	}
	return producerAck(ack), nil
}

func producerAck(a producer.Ack) ackJSON {
	return ackJSON{Start: posJSON(a.Start), End: posJSON(a.End), Tail: posJSON(a.Tail)}
}

func (b *storeBackend) openAppender(ctx context.Context, name string, o appendOptions) (appender, error) {
	e := b.e
	st, err := e.locate(name)
	if err != nil {
		return nil, err
	}
	if basin := e.basinName(); o.create && basin != "" {
		// As stream create does: without the basin's marker, the daemon's API and gc do
		// not see the basin's streams.
		if err := ensureBasin(ctx, e, basin); err != nil {
			return nil, err
		}
	}
	p, err := e.newProducer(ctx, st, o.create, o.deliveryTimeout, func(c *producer.Config) {
		c.Committer = commitclient.Config{URL: o.committer, Token: o.committerToken, RequestTimeout: o.committerTimeout}
	})
	if err != nil {
		return nil, err
	}
	return &storeAppender{e: e, name: name, p: p}, nil
}

// storeAppender appends through a producer, which pipelines the appends.
type storeAppender struct {
	e    *libEnv
	name string
	p    *producer.Producer
}

func (a *storeAppender) submit(in batchfmt.AppendInput) (ackWaiter, error) {
	t, err := a.p.Append(context.Background(), in)
	if err != nil {
		return nil, a.e.streamErr(a.name, appendErr(err))
	}
	return &storeTicket{a: a, t: t}, nil
}

func (a *storeAppender) close() error {
	if err := closeProducer(a.p); err != nil {
		return a.e.streamErr(a.name, err)
	}
	return nil
}

type storeTicket struct {
	a *storeAppender
	t *producer.Ticket
}

func (t *storeTicket) wait() (ackJSON, error) {
	ack, err := t.t.Wait(context.Background())
	if err != nil {
		return ackJSON{}, t.a.e.streamErr(t.a.name, appendErr(err))
	}
	return producerAck(ack), nil
}

func (b *storeBackend) openRead(ctx context.Context, name string, req consumer.ReadRequest) (recordSession, error) {
	e := b.e
	st, err := e.locate(name)
	if err != nil {
		return nil, err
	}
	r, err := e.newReader(st)
	if err != nil {
		return nil, err
	}
	var hub *watch.Hub
	if req.Follow {
		// Told of commits by the stream's committer while one answers (followHub).
		if hub, err = e.followHub(commitclient.Config{Token: b.followToken}); err != nil {
			return nil, err
		}
		cfg := r.Config()
		cfg.Watch = hub
		if r, err = consumer.NewReader(cfg); err != nil {
			hub.Close()
			return nil, err
		}
	}
	sess, err := r.Open(ctx, req)
	if err != nil {
		if hub != nil {
			hub.Close()
		}
		return nil, e.readErr(name, err)
	}
	return &storeRead{e: e, name: name, s: sess, hub: hub}, nil
}

// storeRead is a consumer session whose errors are worded for the user.
type storeRead struct {
	e    *libEnv
	name string
	s    *consumer.Session
	hub  *watch.Hub // read --follow's, or nil
}

func (r *storeRead) next(ctx context.Context) ([]consumer.SequencedRecord, error) {
	b, err := r.s.Next(ctx)
	switch {
	case err == nil:
		return b.Records, nil
	case errors.Is(err, consumer.ErrDone), ctx.Err() != nil:
		return nil, err
	}
	return nil, r.e.readErr(r.name, err)
}

func (r *storeRead) close() {
	r.s.Close()
	if r.hub != nil {
		r.hub.Close()
	}
}
