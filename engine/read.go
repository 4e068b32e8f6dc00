package engine

import (
	"context"
	"errors"

	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/stream"
)

// reader returns the stream's shared stateless reader (its segment cache is shared by every
// read of the stream). Readers are cheap and hold no goroutines, so they are kept until the
// stream is deleted or the engine closes.
func (e *Engine) reader(basin, name string) (*consumer.Reader, error) {
	st, err := stream.Locate(basin, name)
	if err != nil {
		return nil, err
	}
	key := streamKey{basin, name}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if r, ok := e.readers[key]; ok {
		return r, nil
	}
	r, err := consumer.NewReader(e.cfg.consumerConfig(st, e.watch))
	if err != nil {
		return nil, err
	}
	e.readers[key] = r
	return r, nil
}

// Open starts a read session on a stream (see consumer.Reader.Open).
func (e *Engine) Open(ctx context.Context, basin, name string, req consumer.ReadRequest) (*consumer.Session, error) {
	r, err := e.reader(basin, name)
	if err != nil {
		return nil, err
	}
	s, err := r.Open(ctx, req)
	if errors.Is(err, manifest.ErrNotExist) {
		if berr := e.requireBasin(ctx, basin); berr != nil {
			return nil, berr
		}
	}
	return s, err
}

func (b *s2Backend) Read(ctx context.Context, basin, stream string, start s2api.ReadStart) (server.ReadCursor, error) {
	st := startAt(start.SeqNum, start.Timestamp, start.TailOffset, consumer.AtTailOffset(0))
	st.Clamp = start.Clamp
	s, err := b.e.Open(ctx, basin, stream, consumer.ReadRequest{Start: st, Follow: true})
	if err != nil {
		var re *consumer.RangeError
		if errors.As(err, &re) {
			return nil, &s2api.RangeNotSatisfiableError{Tail: pos(re.Tail)}
		}
		return nil, apiError(err)
	}
	// A timestamp after the tail's (the last record's) is past the tail, as in S2: a 416, or
	// with clamp the tail's seq_num (from which every later record is read, whatever its
	// timestamp).
	if tail := s.Tail(); start.Timestamp != nil && *start.Timestamp > tail.Timestamp {
		_ = s.Close()
		if !start.Clamp {
			return nil, &s2api.RangeNotSatisfiableError{Tail: pos(tail)}
		}
		at := consumer.AtSeqNum(tail.SeqNum)
		at.Clamp = true // the stream may have been replaced by a shorter one meanwhile
		s, err = b.e.Open(ctx, basin, stream, consumer.ReadRequest{Start: at, Follow: true})
		if err != nil {
			return nil, apiError(err)
		}
	}
	cfg := b.e.cfg.Consumer
	return &cursor{s: s, maxRecords: cfg.MaxBatchRecords, maxBytes: cfg.MaxBatchBytes}, nil
}

// cursor adapts a following consumer.Session to the server's ReadCursor. A session's batch
// may be larger than the server asks for; the rest waits in pending for the next call.
type cursor struct {
	s                    *consumer.Session
	pending              []consumer.SequencedRecord
	pendingBytes         int // meteredSize(pending)
	maxRecords, maxBytes int // one Poll's limits: the reader's batch limits
}

func (c *cursor) Next(ctx context.Context, lim server.ReadLimit, block bool) (s2api.ReadBatch, error) {
	if len(c.pending) == 0 && block {
		b, err := c.s.Next(ctx)
		if err != nil {
			return s2api.ReadBatch{}, apiError(err)
		}
		c.pending = b.Records
		c.pendingBytes = meteredSize(b.Records)
	}
	// Top up with what is available now, without waiting at the tail, until the limits are
	// met: one session batch may hold only part of what the stream has.
	for len(c.pending) < lim.Records && c.pendingBytes < lim.Bytes {
		b, err := c.s.Read(ctx, c.maxRecords, c.maxBytes, false)
		if err != nil {
			return s2api.ReadBatch{}, apiError(err)
		}
		if len(b.Records) == 0 {
			break
		}
		c.pending = append(c.pending, b.Records...)
		c.pendingBytes += meteredSize(b.Records)
	}
	n, bytes := 0, 0
	for n < len(c.pending) && n < lim.Records {
		sz := c.pending[n].MeteredSize()
		if n > 0 && bytes+sz > lim.Bytes {
			break
		}
		bytes += sz
		n++
	}
	out := s2api.ReadBatch{Records: make([]s2api.SequencedRecord, n)}
	for i, r := range c.pending[:n] {
		out.Records[i] = s2api.SequencedRecord{SeqNum: r.SeqNum, Timestamp: r.Timestamp, Headers: r.Headers, Body: r.Body}
	}
	c.pending = c.pending[n:]
	c.pendingBytes -= bytes
	tail := pos(c.s.Tail())
	out.Tail = &tail
	return out, nil
}

func meteredSize(rs []consumer.SequencedRecord) int {
	n := 0
	for i := range rs {
		n += rs[i].MeteredSize()
	}
	return n
}

func (c *cursor) Close() error { return c.s.Close() }

// startAt is the position S2's API names by one of seq_num, timestamp and tail_offset (the
// first given), or def when none is.
func startAt(seq, ts, tailOffset *uint64, def consumer.Start) consumer.Start {
	switch {
	case seq != nil:
		return consumer.AtSeqNum(*seq)
	case ts != nil:
		return consumer.AtTimestamp(*ts)
	case tailOffset != nil:
		return consumer.AtTailOffset(*tailOffset)
	}
	return def
}
