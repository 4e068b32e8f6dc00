package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/s2api"
)

// apiBackend is the backend of a daemon's S2 API (--endpoint): every operation is one or a
// few of the daemon's calls, made with the caller's token (--token).
type apiBackend struct {
	g     *globals
	log   *slog.Logger
	c     *apiClient
	basin string // the streams' basin; "" for the basin commands
}

// errNoBasin says why --endpoint needs --basin.
var errNoBasin = errors.New("--basin (or SLUICE_BASIN) is required with --endpoint: S2's API serves streams only in basins, so the store's root namespace (streams made without --basin) cannot be reached through a daemon (sluice basin list lists the basins)")

// newAPIBackend opens the daemon's backend; basin is the command's --basin (nil for the
// basin commands, which name no stream).
func newAPIBackend(g *globals, basin *string) (*apiBackend, error) {
	var errs []error
	if basin != nil {
		if *basin == "" {
			errs = append(errs, errNoBasin)
		} else if err := s2api.ValidateBasinName(*basin); err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for --basin: %w (S2's rule: %s)", *basin, err, basinNameRule))
		}
	}
	c, err := newAPIClient(g.endpoint, g.token)
	if err != nil {
		errs = append(errs, err)
	}
	log, err := newLogger(g.logLevel, g.logFormat)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	b := &apiBackend{g: g, c: c, log: log}
	if basin != nil {
		b.basin = *basin
	}
	return b, nil
}

func (b *apiBackend) close() {}

// daemon names the daemon in messages.
func (b *apiBackend) daemon() string { return "daemon " + redactURL(b.g.endpoint) }

// where describes a stream for messages: its name, basin and daemon.
func (b *apiBackend) where(name string) string {
	return fmt.Sprintf("stream %q in basin %q at %s", name, b.basin, b.daemon())
}

// header is the headers of a call on the basin's streams; records travel in base64, so that
// any bytes survive.
func (b *apiBackend) header() http.Header {
	return http.Header{"S2-Basin": {b.basin}, "S2-Format": {"base64"}}
}

func streamPath(name string) string { return "/streams/" + url.PathEscape(name) }

// streamErr turns the daemon's refusals about a stream into messages a user can act on,
// in the words the store's are.
func (b *apiBackend) streamErr(name string, err error) error {
	var sm *s2api.SeqNumMismatchError
	var fm *s2api.FencingTokenMismatchError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case daemonCode(err) == s2api.CodeStreamNotFound:
		return fmt.Errorf("%s does not exist (create it with: sluice stream create %s --basin %s)", b.where(name), shellQuote(name), b.basin)
	case daemonCode(err) == s2api.CodeBasinNotFound:
		return fmt.Errorf("basin %q at %s does not exist (sluice basin list lists the basins)", b.basin, b.daemon())
	case daemonCode(err) == s2api.CodeResourceAlreadyExists:
		return fmt.Errorf("%s already exists", b.where(name))
	case errors.As(err, &sm):
		return fmt.Errorf("%s: append rejected: match_seq_num does not match the stream's tail, which is at seq_num %d (check --match-seq-num)", b.where(name), sm.Expected)
	case errors.As(err, &fm):
		return fmt.Errorf("%s: append rejected: fencing token mismatch, the stream's fencing token is %q (check --fencing-token)", b.where(name), fm.Actual)
	}
	return fmt.Errorf("%s: %w", b.where(name), err)
}

// basinErr is streamErr for a basin.
func (b *apiBackend) basinErr(name string, err error) error {
	where := fmt.Sprintf("basin %q at %s", name, b.daemon())
	switch {
	case err == nil:
		return nil
	case daemonCode(err) == s2api.CodeBasinNotFound:
		return fmt.Errorf("%s does not exist (sluice basin list lists the basins)", where)
	case daemonCode(err) == s2api.CodeResourceAlreadyExists:
		return fmt.Errorf("%s already exists", where)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// errQueueMode refuses --queue-mode through a daemon.
var errQueueMode = errors.New("--queue-mode needs a store (--store): S2's API has no queue mode, so a daemon neither sets nor shows it")

// toS2Config renders a stream configuration as S2's.
func toS2Config(c manifest.Config) s2api.StreamConfig {
	rp := s2api.RetentionPolicy{Infinite: c.Retention.Infinite, AgeSecs: c.Retention.AgeSecs}
	mode, uncapped, minAge := c.Timestamping.Mode.String(), c.Timestamping.Uncapped, c.DeleteOnEmpty.MinAgeSecs
	out := s2api.StreamConfig{
		RetentionPolicy: &rp,
		Timestamping:    &s2api.TimestampingConfig{Mode: &mode, Uncapped: &uncapped},
		DeleteOnEmpty:   &s2api.DeleteOnEmptyConfig{MinAgeSecs: &minAge},
	}
	if c.StorageClass != "" {
		class := c.StorageClass
		out.StorageClass = &class
	}
	return out
}

// fromS2Config reads S2's stream configuration (the fields it gives, over the defaults).
func fromS2Config(r s2api.StreamConfig) (manifest.Config, error) {
	c := manifest.DefaultConfig()
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
				return c, fmt.Errorf("the daemon's stream config: %w", err)
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
	return c, nil
}

func (b *apiBackend) createStream(ctx context.Context, name string, cfg manifest.Config) error {
	if cfg.QueueMode {
		return errQueueMode
	}
	s2 := toS2Config(cfg)
	err := b.c.call(ctx, "POST", "/streams", b.header(), s2api.CreateStreamRequest{Stream: name, Config: &s2}, nil)
	return b.streamErr(name, err)
}

func (b *apiBackend) streamConfig(ctx context.Context, name string, change func(*manifest.Config) error) (manifest.Config, error) {
	var s2 s2api.StreamConfig
	if err := b.c.call(ctx, "GET", streamPath(name), b.header(), nil, &s2); err != nil {
		return manifest.Config{}, b.streamErr(name, err)
	}
	cur, err := fromS2Config(s2)
	if err != nil || change == nil {
		return cur, err
	}
	next := cur
	if err := change(&next); errors.Is(err, manifest.ErrNoChange) {
		return cur, nil
	} else if err != nil {
		return manifest.Config{}, err
	}
	if next.QueueMode != cur.QueueMode {
		return manifest.Config{}, errQueueMode
	}
	var got s2api.StreamConfig
	if err := b.c.call(ctx, "PATCH", streamPath(name), b.header(), toS2Config(next), &got); err != nil {
		return manifest.Config{}, b.streamErr(name, err)
	}
	return fromS2Config(got)
}

// page runs a listing's pages: fetch gets one page after startAfter and returns the last
// name in it and whether more follow.
func page(limit int, startAfter string, fetch func(startAfter string, n int) (last string, got int, more bool, err error)) error {
	for n := 0; limit == 0 || n < limit; {
		size := s2api.MaxListLimit
		if limit > 0 {
			size = min(size, limit-n)
		}
		last, got, more, err := fetch(startAfter, size)
		if err != nil {
			return err
		}
		n += got
		if !more || got == 0 {
			return nil
		}
		startAfter = last
	}
	return nil
}

func (b *apiBackend) listStreams(ctx context.Context, prefix, startAfter string, limit int, emit func(s2api.StreamInfo) error) error {
	return page(limit, startAfter, func(after string, n int) (string, int, bool, error) {
		q := url.Values{"prefix": {prefix}, "start_after": {after}, "limit": {fmt.Sprint(n)}}
		var resp s2api.ListStreamsResponse
		if err := b.c.call(ctx, "GET", "/streams?"+q.Encode(), b.header(), nil, &resp); err != nil {
			return "", 0, false, b.basinErr(b.basin, err)
		}
		for _, s := range resp.Streams {
			if err := emit(s); err != nil {
				return "", 0, false, err
			}
		}
		if len(resp.Streams) == 0 {
			return "", 0, false, nil
		}
		return resp.Streams[len(resp.Streams)-1].Name, len(resp.Streams), resp.HasMore, nil
	})
}

func (b *apiBackend) deleteStream(ctx context.Context, name string) (*int, error) {
	return nil, b.streamErr(name, b.c.call(ctx, "DELETE", streamPath(name), b.header(), nil, nil))
}

func (b *apiBackend) createBasin(ctx context.Context, name string) (s2api.BasinInfo, error) {
	var info s2api.BasinInfo
	err := b.c.call(ctx, "POST", "/basins", nil, s2api.CreateBasinRequest{Basin: name}, &info)
	return info, b.basinErr(name, err)
}

func (b *apiBackend) listBasins(ctx context.Context, prefix, startAfter string, limit int, emit func(s2api.BasinInfo) error) error {
	return page(limit, startAfter, func(after string, n int) (string, int, bool, error) {
		q := url.Values{"prefix": {prefix}, "start_after": {after}, "limit": {fmt.Sprint(n)}}
		var resp s2api.ListBasinsResponse
		if err := b.c.call(ctx, "GET", "/basins?"+q.Encode(), nil, nil, &resp); err != nil {
			return "", 0, false, fmt.Errorf("listing basins at %s: %w", b.daemon(), err)
		}
		for _, s := range resp.Basins {
			if err := emit(s); err != nil {
				return "", 0, false, err
			}
		}
		if len(resp.Basins) == 0 {
			return "", 0, false, nil
		}
		return resp.Basins[len(resp.Basins)-1].Name, len(resp.Basins), resp.HasMore, nil
	})
}

func (b *apiBackend) deleteBasin(ctx context.Context, name string) error {
	return b.basinErr(name, b.c.call(ctx, "DELETE", "/basins/"+url.PathEscape(name), nil, nil, nil))
}

func (b *apiBackend) tail(ctx context.Context, name string) (positionJSON, error) {
	var resp s2api.TailResponse
	if err := b.c.call(ctx, "GET", streamPath(name)+"/records/tail", b.header(), nil, &resp); err != nil {
		return positionJSON{}, b.streamErr(name, err)
	}
	return positionJSON(resp.Tail), nil
}

// post sends one append and returns its ack. It uses the client without a timeout: ctx
// bounds it (append's --delivery-timeout).
func (b *apiBackend) post(ctx context.Context, name string, in batchfmt.AppendInput) (ackJSON, error) {
	res, err := b.c.send(ctx, b.c.streaming, "POST", streamPath(name)+"/records", b.header(), s2api.EncodeAppendInputJSON(&in, s2api.FormatBase64))
	if err != nil {
		return ackJSON{}, b.streamErr(name, err)
	}
	defer res.Body.Close()
	var ack s2api.AppendAck
	if err := decodeJSONBody(res, &ack); err != nil {
		return ackJSON{}, b.streamErr(name, err)
	}
	return ackJSON{Start: positionJSON(ack.Start), End: positionJSON(ack.End), Tail: positionJSON(ack.Tail)}, nil
}

func (b *apiBackend) appendSync(ctx context.Context, name string, in batchfmt.AppendInput) (ackJSON, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultCLIDeliveryTimeout)
	defer cancel()
	return b.post(ctx, name, in)
}
