package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/stream"
)

// S2 returns the engine as the backend of S2's HTTP API.
func (e *Engine) S2() server.Backend { return &s2Backend{e: e} }

type s2Backend struct{ e *Engine }

var _ server.Backend = (*s2Backend)(nil)

// apiError maps the engine's errors to S2's error classes.
func apiError(err error) error {
	if err == nil {
		return nil
	}
	var sm *manifest.SeqNumMismatchError
	var fm *manifest.FencingTokenMismatchError
	switch {
	case errors.As(err, &sm):
		return &s2api.SeqNumMismatchError{Expected: sm.Expected}
	case errors.As(err, &fm):
		return &s2api.FencingTokenMismatchError{Actual: fm.Actual}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, batchfmt.ErrInvalid):
		return err
	case errors.Is(err, ErrBasinNotFound):
		return &s2api.Error{Code: s2api.CodeBasinNotFound, Message: strings.TrimPrefix(err.Error(), "engine: "), Err: err}
	case errors.Is(err, manifest.ErrNotExist):
		return &s2api.Error{Code: s2api.CodeStreamNotFound, Message: "stream not found", Err: err}
	case errors.Is(err, ErrBasinExists):
		return &s2api.Error{Code: s2api.CodeResourceAlreadyExists, Message: strings.TrimPrefix(err.Error(), "engine: "), Err: err}
	case errors.Is(err, manifest.ErrExists):
		// Not err's text: it names the manifest's key in the store, which is no client's business.
		return &s2api.Error{Code: s2api.CodeResourceAlreadyExists, Message: "stream already exists", Err: err}
	case errors.Is(err, stream.ErrInvalidName), errors.Is(err, manifest.ErrInvalidConfig), errors.Is(err, manifest.ErrTimestampRequired):
		return &s2api.Error{Code: s2api.CodeInvalid, Message: err.Error(), Err: err}
	case errors.Is(err, ErrClosed), errors.Is(err, producer.ErrClosed):
		return &s2api.Error{Code: s2api.CodeUnavailable, Message: "the server is shutting down", Err: err}
	case errors.Is(err, producer.ErrDeliveryTimeout):
		// Not err's text (it names keys); the class of the store's refusal, if that is
		// the cause (the producer wraps no other cause).
		msg := "the append (or one before it) was not committed within the delivery timeout; nothing of it is in the stream"
		if objectstore.Refused(err) {
			msg += " (storage error (" + objectstore.ErrorClass(err) + "))"
		}
		return &s2api.Error{Code: s2api.CodeUnavailable, Message: msg, Err: err}
	case errors.Is(err, objectstore.ErrOutcomeUnknown), errors.Is(err, manifest.ErrOutcomeUnknown):
		return &s2api.Error{Code: s2api.CodeUnavailable, Message: "the outcome of a storage write is unknown; retry", Err: err}
	case errors.Is(err, manifest.ErrCorrupt), errors.Is(err, batchfmt.ErrCorrupt),
		errors.Is(err, consumer.ErrCorrupt), errors.Is(err, consumer.ErrMissingObject):
		return &s2api.Error{Code: s2api.CodeStorage, Message: err.Error(), Err: err}
	}
	var oe *objectstore.OpError
	if errors.As(err, &oe) {
		// The error's class, not its text: that names the bucket, keys and request ids.
		msg := "storage error"
		if c := objectstore.ErrorClass(err); c != "other" {
			msg += " (" + c + ")"
		}
		return &s2api.Error{Code: s2api.CodeStorage, Message: msg, Err: err}
	}
	return err
}

func ptr[T any](v T) *T { return &v }

// streamConfig renders a manifest config as S2's stream config, every field filled in.
func streamConfig(c manifest.Config) s2api.StreamConfig {
	rp := s2api.RetentionPolicy{Infinite: c.Retention.Infinite, AgeSecs: c.Retention.AgeSecs}
	class := c.StorageClass
	if class == "" {
		class = s2api.StorageClassExpress
	}
	return s2api.StreamConfig{
		StorageClass:    &class,
		RetentionPolicy: &rp,
		Timestamping:    &s2api.TimestampingConfig{Mode: ptr(c.Timestamping.Mode.String()), Uncapped: ptr(c.Timestamping.Uncapped)},
		DeleteOnEmpty:   &s2api.DeleteOnEmptyConfig{MinAgeSecs: ptr(c.DeleteOnEmpty.MinAgeSecs)},
	}
}

// applyStreamConfig changes c by the fields that r gives. storage_class is kept so that it
// reads back as set; it changes nothing else (sluice's latency is the store's).
func applyStreamConfig(c *manifest.Config, r s2api.StreamConfig) error {
	if r.StorageClass != nil {
		c.StorageClass = *r.StorageClass
	}
	if p := r.RetentionPolicy; p != nil {
		c.Retention = manifest.Retention{Infinite: p.Infinite, AgeSecs: p.AgeSecs}
	}
	if t := r.Timestamping; t != nil {
		if t.Mode != nil {
			m, err := manifest.ParseTimestampingMode(*t.Mode)
			if err != nil {
				return err
			}
			c.Timestamping.Mode = m
		}
		if t.Uncapped != nil {
			c.Timestamping.Uncapped = *t.Uncapped
		}
	}
	if d := r.DeleteOnEmpty; d != nil && d.MinAgeSecs != nil {
		c.DeleteOnEmpty.MinAgeSecs = *d.MinAgeSecs
	}
	return c.Validate()
}

func basinConfig(info BasinInfo) (s2api.BasinConfig, error) {
	var cfg s2api.BasinConfig
	if len(info.Config) > 0 {
		if err := json.Unmarshal(info.Config, &cfg); err != nil {
			return cfg, fmt.Errorf("engine: basin %q has a corrupt config: %w", info.Name, err)
		}
	}
	return cfg, nil
}

// validateBasinConfig checks a basin's default stream config as the streams created in the
// basin will apply it, so that an invalid one is refused when it is given.
func validateBasinConfig(cfg s2api.BasinConfig) error {
	if cfg.DefaultStreamConfig == nil {
		return nil
	}
	mc := manifest.DefaultConfig()
	if err := applyStreamConfig(&mc, *cfg.DefaultStreamConfig); err != nil {
		return fmt.Errorf("default_stream_config: %w", err)
	}
	return nil
}

func (b *s2Backend) CreateBasin(ctx context.Context, name string, cfg s2api.BasinConfig) (s2api.BasinInfo, error) {
	if err := validateBasinConfig(cfg); err != nil {
		return s2api.BasinInfo{}, apiError(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return s2api.BasinInfo{}, err
	}
	info, err := b.e.CreateBasin(ctx, name, raw)
	if err != nil {
		return s2api.BasinInfo{}, apiError(err)
	}
	return s2api.BasinInfo{Name: info.Name, CreatedAt: info.CreatedAt}, nil
}

func (b *s2Backend) ListBasins(ctx context.Context, req s2api.ListRequest) (s2api.ListBasinsResponse, error) {
	infos, more, err := b.e.ListBasins(ctx, req.Prefix, req.StartAfter, req.Limit)
	if err != nil {
		return s2api.ListBasinsResponse{}, apiError(err)
	}
	out := s2api.ListBasinsResponse{Basins: make([]s2api.BasinInfo, 0, len(infos)), HasMore: more}
	for _, i := range infos {
		out.Basins = append(out.Basins, s2api.BasinInfo{Name: i.Name, CreatedAt: i.CreatedAt})
	}
	return out, nil
}

func (b *s2Backend) GetBasinConfig(ctx context.Context, name string) (s2api.BasinConfig, error) {
	info, err := b.e.Basin(ctx, name)
	if err != nil {
		return s2api.BasinConfig{}, apiError(err)
	}
	cfg, err := basinConfig(info)
	return cfg, apiError(err)
}

func (b *s2Backend) ReconfigureBasin(ctx context.Context, name string, r s2api.BasinReconfiguration) (s2api.BasinConfig, error) {
	var out s2api.BasinConfig
	_, err := b.e.SetBasinConfig(ctx, name, func(old json.RawMessage) (json.RawMessage, error) {
		cfg, err := basinConfig(BasinInfo{Name: name, Config: old})
		if err != nil {
			return nil, err
		}
		out = r.Apply(cfg)
		if err := validateBasinConfig(out); err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
	return out, apiError(err)
}

func (b *s2Backend) DeleteBasin(ctx context.Context, name string) error {
	return apiError(b.e.DeleteBasin(ctx, name))
}

// s2DefaultRetentionSecs is S2's retention for a stream whose config gives none: 7 days.
const s2DefaultRetentionSecs = 7 * 24 * 3600

// streamDefaults is the config of a stream created in basin with no field given: the global
// defaults (manifest.DefaultConfig) with S2's retention, then the basin's default stream
// config.
func (b *s2Backend) streamDefaults(ctx context.Context, basin string) (manifest.Config, error) {
	binfo, err := b.e.Basin(ctx, basin)
	if err != nil {
		return manifest.Config{}, err
	}
	bcfg, err := basinConfig(binfo)
	if err != nil {
		return manifest.Config{}, err
	}
	// S2's default retention for a stream created through its API is 7 days (the library
	// and the CLI keep records until told otherwise: manifest.DefaultConfig).
	mc := manifest.DefaultConfig()
	mc.Retention = manifest.Retention{AgeSecs: s2DefaultRetentionSecs}
	if bcfg.DefaultStreamConfig != nil {
		if err := applyStreamConfig(&mc, *bcfg.DefaultStreamConfig); err != nil {
			return manifest.Config{}, err
		}
	}
	return mc, nil
}

func (b *s2Backend) StreamDefaults(ctx context.Context, basin string) (s2api.StreamConfig, error) {
	mc, err := b.streamDefaults(ctx, basin)
	if err != nil {
		return s2api.StreamConfig{}, apiError(err)
	}
	return streamConfig(mc), nil
}

func (b *s2Backend) createStream(ctx context.Context, basin, stream string, cfg s2api.StreamConfig) (*manifest.Snapshot, error) {
	mc, err := b.streamDefaults(ctx, basin)
	if err != nil {
		return nil, err
	}
	if err := applyStreamConfig(&mc, cfg); err != nil {
		return nil, err
	}
	return b.e.CreateStream(ctx, basin, stream, mc)
}

func (b *s2Backend) CreateStream(ctx context.Context, basin, stream string, cfg s2api.StreamConfig) (s2api.StreamInfo, error) {
	snap, err := b.createStream(ctx, basin, stream, cfg)
	if err != nil {
		return s2api.StreamInfo{}, apiError(err)
	}
	return streamInfo(stream, snap.State), nil
}

func streamInfo(name string, st *manifest.State) s2api.StreamInfo {
	return s2api.StreamInfo{Name: name, CreatedAt: time.UnixMilli(int64(st.CreatedMs)).UTC()}
}

func (b *s2Backend) ListStreams(ctx context.Context, basin string, req s2api.ListRequest) (s2api.ListStreamsResponse, error) {
	streams, more, err := b.e.ListStreams(ctx, basin, req.Prefix, req.StartAfter, req.Limit)
	if err != nil {
		return s2api.ListStreamsResponse{}, apiError(err)
	}
	out := s2api.ListStreamsResponse{Streams: make([]s2api.StreamInfo, 0, len(streams)), HasMore: more}
	for _, st := range streams {
		snap, err := manifest.Open(b.e.cfg.Store, st.ManifestKey()).Load(ctx)
		if errors.Is(err, manifest.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return s2api.ListStreamsResponse{}, apiError(err)
		}
		out.Streams = append(out.Streams, streamInfo(st.Name(), snap.State))
	}
	return out, nil
}

func (b *s2Backend) GetStreamConfig(ctx context.Context, basin, stream string) (s2api.StreamConfig, error) {
	snap, err := b.e.Stream(ctx, basin, stream)
	if err != nil {
		return s2api.StreamConfig{}, apiError(err)
	}
	return streamConfig(snap.State.Config), nil
}

func (b *s2Backend) ReconfigureStream(ctx context.Context, basin, stream string, r s2api.StreamConfig) (s2api.StreamConfig, error) {
	snap, err := b.e.Reconfigure(ctx, basin, stream, func(c *manifest.Config) error {
		return applyStreamConfig(c, r)
	})
	if err != nil {
		return s2api.StreamConfig{}, apiError(err)
	}
	return streamConfig(snap.State.Config), nil
}

func (b *s2Backend) DeleteStream(ctx context.Context, basin, stream string) error {
	_, err := b.e.DeleteStream(ctx, basin, stream)
	return apiError(err)
}

func (b *s2Backend) Append(ctx context.Context, basin, stream string, in batchfmt.AppendInput) (s2api.AppendAck, error) {
	ack, err := b.e.Append(ctx, basin, stream, in)
	if err != nil {
		return s2api.AppendAck{}, apiError(err)
	}
	return appendAck(ack), nil
}

func appendAck(ack producer.Ack) s2api.AppendAck {
	return s2api.AppendAck{Start: pos(ack.Start), End: pos(ack.End), Tail: pos(ack.Tail)}
}

// OpenAppends is server.AsyncAppender's: an append session's inputs go to
// Engine.AppendAsync on one producer.Chain.
func (b *s2Backend) OpenAppends() server.Appends {
	return &s2Appends{e: b.e, chain: new(producer.Chain)}
}

type s2Appends struct {
	e     *Engine
	chain *producer.Chain
}

func (a *s2Appends) Append(ctx context.Context, basin, stream string, in batchfmt.AppendInput) (func(context.Context) (s2api.AppendAck, error), error) {
	wait, err := a.e.AppendAsync(ctx, basin, stream, in, a.chain)
	if err != nil {
		return nil, apiError(err)
	}
	return func(wctx context.Context) (s2api.AppendAck, error) {
		ack, err := wait(wctx)
		if err != nil {
			return s2api.AppendAck{}, apiError(err)
		}
		return appendAck(ack), nil
	}, nil
}

func pos(p manifest.Position) s2api.StreamPosition {
	return s2api.StreamPosition{SeqNum: p.SeqNum, Timestamp: p.Timestamp}
}

func (b *s2Backend) CheckTail(ctx context.Context, basin, stream string) (s2api.StreamPosition, error) {
	t, err := b.e.Tail(ctx, basin, stream)
	if err != nil {
		return s2api.StreamPosition{}, apiError(err)
	}
	return pos(t), nil
}
