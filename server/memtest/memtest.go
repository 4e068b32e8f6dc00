// Package memtest is a TEST FIXTURE: a small, in-memory reference implementation of
// server.Backend, written to S2's semantics so that the API server's tests (and the SDK
// compatibility check) can run before the real engine exists. The engine binding must pass the
// same tests. It keeps everything in memory, forever; never use it to serve real data.
package memtest

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
)

// Backend is the in-memory reference backend. The zero value is not usable; call New.
type Backend struct {
	mu     sync.Mutex
	basins map[string]*basin
	now    func() time.Time
}

type basin struct {
	info    s2api.BasinInfo
	cfg     s2api.BasinConfig
	streams map[string]*stream
}

type stream struct {
	info    s2api.StreamInfo
	cfg     s2api.StreamConfig
	records []s2api.SequencedRecord // records[i].SeqNum == i
	trim    uint64                  // first readable seq_num
	token   string
	changed chan struct{} // closed and replaced on every append or deletion
	deleted bool
}

// New returns an empty backend; now is the clock for arrival timestamps (nil: time.Now).
func New(now func() time.Time) *Backend {
	if now == nil {
		now = time.Now
	}
	return &Backend{basins: map[string]*basin{}, now: now}
}

var _ server.Backend = (*Backend)(nil)

func ptr[T any](v T) *T { return &v }

// defaults is the effective config of a stream with nothing configured.
func defaults() s2api.StreamConfig {
	return s2api.StreamConfig{
		StorageClass:    ptr(s2api.StorageClassExpress),
		RetentionPolicy: &s2api.RetentionPolicy{AgeSecs: 7 * 24 * 3600},
		Timestamping:    &s2api.TimestampingConfig{Mode: ptr(s2api.TimestampingClientPrefer), Uncapped: ptr(false)},
		DeleteOnEmpty:   &s2api.DeleteOnEmptyConfig{MinAgeSecs: ptr(uint64(0))},
	}
}

func (b *Backend) basin(name string) (*basin, error) {
	bs, ok := b.basins[name]
	if !ok {
		return nil, s2api.Errorf(s2api.CodeBasinNotFound, "basin %q not found", name)
	}
	return bs, nil
}

func (b *Backend) stream(basinName, name string) (*stream, error) {
	bs, err := b.basin(basinName)
	if err != nil {
		return nil, err
	}
	st, ok := bs.streams[name]
	if !ok {
		return nil, s2api.Errorf(s2api.CodeStreamNotFound, "stream %q not found", name)
	}
	return st, nil
}

// validBasinConfig checks a basin's default stream config, as the engine does.
func validBasinConfig(cfg s2api.BasinConfig) error {
	if cfg.DefaultStreamConfig == nil {
		return nil
	}
	return cfg.DefaultStreamConfig.Validate()
}

func (b *Backend) CreateBasin(_ context.Context, name string, cfg s2api.BasinConfig) (s2api.BasinInfo, error) {
	if err := validBasinConfig(cfg); err != nil {
		return s2api.BasinInfo{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.basins[name]; ok {
		return s2api.BasinInfo{}, s2api.Errorf(s2api.CodeResourceAlreadyExists, "basin %q already exists", name)
	}
	bs := &basin{info: s2api.BasinInfo{Name: name, CreatedAt: b.now().UTC()}, cfg: cfg, streams: map[string]*stream{}}
	b.basins[name] = bs
	return bs.info, nil
}

func page[T any](names []string, get func(string) T, req s2api.ListRequest) ([]T, bool) {
	sort.Strings(names)
	out := []T{}
	for _, n := range names {
		if !strings.HasPrefix(n, req.Prefix) || n <= req.StartAfter {
			continue
		}
		if len(out) == req.Limit {
			return out, true
		}
		out = append(out, get(n))
	}
	return out, false
}

func (b *Backend) ListBasins(_ context.Context, req s2api.ListRequest) (s2api.ListBasinsResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.basins))
	for n := range b.basins {
		names = append(names, n)
	}
	out, more := page(names, func(n string) s2api.BasinInfo { return b.basins[n].info }, req)
	return s2api.ListBasinsResponse{Basins: out, HasMore: more}, nil
}

func (b *Backend) GetBasinConfig(_ context.Context, name string) (s2api.BasinConfig, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs, err := b.basin(name)
	if err != nil {
		return s2api.BasinConfig{}, err
	}
	return bs.cfg, nil
}

func (b *Backend) ReconfigureBasin(_ context.Context, name string, r s2api.BasinReconfiguration) (s2api.BasinConfig, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs, err := b.basin(name)
	if err != nil {
		return s2api.BasinConfig{}, err
	}
	cfg := r.Apply(bs.cfg)
	if err := validBasinConfig(cfg); err != nil {
		return s2api.BasinConfig{}, err
	}
	bs.cfg = cfg
	return bs.cfg, nil
}

func (b *Backend) DeleteBasin(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs, err := b.basin(name)
	if err != nil {
		return err
	}
	for _, st := range bs.streams {
		st.deleted = true
		close(st.changed)
		st.changed = make(chan struct{})
	}
	delete(b.basins, name)
	return nil
}

func (b *Backend) CreateStream(_ context.Context, basinName, name string, cfg s2api.StreamConfig) (s2api.StreamInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs, err := b.basin(basinName)
	if err != nil {
		return s2api.StreamInfo{}, err
	}
	if _, ok := bs.streams[name]; ok {
		return s2api.StreamInfo{}, s2api.Errorf(s2api.CodeResourceAlreadyExists, "stream %q already exists", name)
	}
	eff := bs.streamDefaults().Merge(cfg)
	st := &stream{info: s2api.StreamInfo{Name: name, CreatedAt: b.now().UTC()}, cfg: eff, changed: make(chan struct{})}
	bs.streams[name] = st
	return st.info, nil
}

func (b *Backend) ListStreams(_ context.Context, basinName string, req s2api.ListRequest) (s2api.ListStreamsResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs, err := b.basin(basinName)
	if err != nil {
		return s2api.ListStreamsResponse{}, err
	}
	names := make([]string, 0, len(bs.streams))
	for n := range bs.streams {
		names = append(names, n)
	}
	out, more := page(names, func(n string) s2api.StreamInfo { return bs.streams[n].info }, req)
	return s2api.ListStreamsResponse{Streams: out, HasMore: more}, nil
}

func (b *Backend) StreamDefaults(_ context.Context, basinName string) (s2api.StreamConfig, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs, err := b.basin(basinName)
	if err != nil {
		return s2api.StreamConfig{}, err
	}
	return bs.streamDefaults(), nil
}

// streamDefaults is the config of a stream created in the basin with no field given.
func (bs *basin) streamDefaults() s2api.StreamConfig {
	eff := defaults()
	if bs.cfg.DefaultStreamConfig != nil {
		eff = eff.Merge(*bs.cfg.DefaultStreamConfig)
	}
	return eff
}

func (b *Backend) GetStreamConfig(_ context.Context, basinName, name string) (s2api.StreamConfig, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(basinName, name)
	if err != nil {
		return s2api.StreamConfig{}, err
	}
	return st.cfg, nil
}

func (b *Backend) ReconfigureStream(_ context.Context, basinName, name string, r s2api.StreamConfig) (s2api.StreamConfig, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(basinName, name)
	if err != nil {
		return s2api.StreamConfig{}, err
	}
	st.cfg = st.cfg.Merge(r)
	return st.cfg, nil
}

func (b *Backend) DeleteStream(_ context.Context, basinName, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs, err := b.basin(basinName)
	if err != nil {
		return err
	}
	st, ok := bs.streams[name]
	if !ok {
		return s2api.Errorf(s2api.CodeStreamNotFound, "stream %q not found", name)
	}
	st.deleted = true
	close(st.changed)
	st.changed = make(chan struct{})
	delete(bs.streams, name)
	return nil
}

func (st *stream) tail() s2api.StreamPosition {
	p := s2api.StreamPosition{SeqNum: uint64(len(st.records))}
	if n := len(st.records); n > 0 {
		p.Timestamp = st.records[n-1].Timestamp
	}
	return p
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func (b *Backend) Append(_ context.Context, basinName, name string, in batchfmt.AppendInput) (s2api.AppendAck, error) {
	if err := in.Validate(); err != nil {
		return s2api.AppendAck{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(basinName, name)
	if err != nil {
		return s2api.AppendAck{}, err
	}
	if in.FencingToken != nil && *in.FencingToken != st.token {
		return s2api.AppendAck{}, &s2api.FencingTokenMismatchError{Actual: st.token}
	}
	start := st.tail()
	if in.MatchSeqNum != nil && *in.MatchSeqNum != start.SeqNum {
		return s2api.AppendAck{}, &s2api.SeqNumMismatchError{Expected: start.SeqNum}
	}
	mode := s2api.TimestampingClientPrefer
	uncapped := false
	if t := st.cfg.Timestamping; t != nil {
		if t.Mode != nil {
			mode = *t.Mode
		}
		if t.Uncapped != nil {
			uncapped = *t.Uncapped
		}
	}
	now := uint64(b.now().UnixMilli())
	last := start.Timestamp
	recs := make([]s2api.SequencedRecord, len(in.Records))
	token, trim := st.token, st.trim
	for i := range in.Records {
		r := &in.Records[i]
		ts := now
		switch mode {
		case s2api.TimestampingClientRequire:
			if !r.HasTimestamp {
				return s2api.AppendAck{}, s2api.Errorf(s2api.CodeInvalid, "record %d has no timestamp, which the stream's timestamping mode client-require demands", i)
			}
			ts = r.Timestamp
		case s2api.TimestampingClientPrefer:
			if r.HasTimestamp {
				ts = r.Timestamp
			}
		}
		if !uncapped && ts > now {
			ts = now
		}
		if ts < last {
			ts = last
		}
		last = ts
		sr := s2api.SequencedRecord{SeqNum: start.SeqNum + uint64(i), Timestamp: ts, Body: cloneBytes(r.Body)}
		for _, h := range r.Headers {
			sr.Headers = append(sr.Headers, batchfmt.Header{Name: cloneBytes(h.Name), Value: cloneBytes(h.Value)})
		}
		switch r.Command() {
		case batchfmt.CommandFence:
			token = string(r.Body)
		case batchfmt.CommandTrim:
			// As S2: the trim point goes at most past the trim record itself.
			if n, ok := r.TrimSeqNum(); ok && min(n, sr.SeqNum+1) > trim {
				trim = min(n, sr.SeqNum+1)
			}
		}
		recs[i] = sr
	}
	st.records = append(st.records, recs...)
	st.token = token
	st.trim = trim
	close(st.changed)
	st.changed = make(chan struct{})
	end := st.tail()
	return s2api.AppendAck{
		Start: s2api.StreamPosition{SeqNum: start.SeqNum, Timestamp: recs[0].Timestamp},
		End:   end,
		Tail:  end,
	}, nil
}

func (b *Backend) CheckTail(_ context.Context, basinName, name string) (s2api.StreamPosition, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(basinName, name)
	if err != nil {
		return s2api.StreamPosition{}, err
	}
	return st.tail(), nil
}

func (b *Backend) Read(_ context.Context, basinName, name string, start s2api.ReadStart) (server.ReadCursor, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(basinName, name)
	if err != nil {
		return nil, err
	}
	tail := st.tail()
	var pos uint64
	switch {
	case start.SeqNum != nil:
		pos = *start.SeqNum
		if pos > tail.SeqNum {
			if !start.Clamp {
				return nil, &s2api.RangeNotSatisfiableError{Tail: tail}
			}
			pos = tail.SeqNum
		}
	case start.Timestamp != nil && *start.Timestamp > tail.Timestamp:
		// After the last record's timestamp: past the tail, as in S2.
		if !start.Clamp {
			return nil, &s2api.RangeNotSatisfiableError{Tail: tail}
		}
		pos = tail.SeqNum
	case start.Timestamp != nil:
		pos = uint64(sort.Search(len(st.records), func(i int) bool { return st.records[i].Timestamp >= *start.Timestamp }))
	case start.TailOffset != nil:
		if *start.TailOffset < tail.SeqNum {
			pos = tail.SeqNum - *start.TailOffset
		}
	default:
		pos = tail.SeqNum
	}
	if pos < st.trim {
		pos = st.trim
	}
	c := &cursor{b: b, st: st, pos: pos}
	if start.Timestamp != nil && *start.Timestamp <= tail.Timestamp {
		c.minTS = *start.Timestamp // records appended later with older timestamps are not read
	}
	return c, nil
}

type cursor struct {
	b     *Backend
	st    *stream
	pos   uint64
	minTS uint64
}

func (c *cursor) Next(ctx context.Context, lim server.ReadLimit, block bool) (s2api.ReadBatch, error) {
	for {
		c.b.mu.Lock()
		if c.st.deleted {
			c.b.mu.Unlock()
			return s2api.ReadBatch{}, s2api.Errorf(s2api.CodeStreamNotFound, "stream %q was deleted", c.st.info.Name)
		}
		if c.pos < c.st.trim {
			c.pos = c.st.trim
		}
		tail := c.st.tail()
		var out []s2api.SequencedRecord
		size := 0
		p := c.pos
		for ; p < tail.SeqNum && len(out) < lim.Records; p++ {
			r := c.st.records[p]
			if r.Timestamp < c.minTS {
				continue
			}
			if len(out) > 0 && size+r.MeteredSize() > lim.Bytes {
				break
			}
			size += r.MeteredSize()
			out = append(out, r)
		}
		c.pos = p // past the records read and those skipped
		changed := c.st.changed
		c.b.mu.Unlock()
		if len(out) > 0 || !block || c.pos < tail.SeqNum {
			return s2api.ReadBatch{Records: out, Tail: &tail}, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s2api.ReadBatch{}, ctx.Err()
		}
	}
}

func (c *cursor) Close() error { return nil }
