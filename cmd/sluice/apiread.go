package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/s2api"
)

// maxSSELine bounds one line of a read session's events: a batch of up to 1 MiB of records,
// in base64 and JSON.
const maxSSELine = 8 << 20

// openRead opens an SSE read session (S2's GET /streams/{s}/records with Accept:
// text/event-stream). Without --follow it asks for wait=0, so that the daemon ends the
// session at the tail. The read's limits and --skip-commands are applied here, on the
// records as they arrive, so that --count and --bytes count what is printed, as on a store.
func (b *apiBackend) openRead(ctx context.Context, name string, req consumer.ReadRequest) (recordSession, error) {
	q := url.Values{}
	switch req.Start.Kind {
	case consumer.StartSeqNum:
		q.Set("seq_num", strconv.FormatUint(req.Start.Value, 10))
	case consumer.StartTimestamp:
		q.Set("timestamp", strconv.FormatUint(req.Start.Value, 10))
	case consumer.StartTailOffset:
		q.Set("tail_offset", strconv.FormatUint(req.Start.Value, 10))
	}
	// A timestamp after every record starts at the tail, as on a store (the API answers 416
	// there unless clamp).
	if req.Start.Clamp || req.Start.Kind == consumer.StartTimestamp {
		q.Set("clamp", "true")
	}
	if req.Until != nil {
		q.Set("until", strconv.FormatUint(*req.Until, 10))
	}
	if !req.SkipCommands {
		// The daemon's limits then count what is printed: let it stop there too.
		if req.Count != nil {
			q.Set("count", strconv.FormatUint(*req.Count, 10))
		}
		if req.Bytes != nil {
			q.Set("bytes", strconv.FormatUint(*req.Bytes, 10))
		}
	}
	if !req.Follow {
		q.Set("wait", "0")
	}
	if req.Count != nil && *req.Count == 0 {
		return &apiRead{done: true}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	h := b.header()
	h.Set("Accept", "text/event-stream")
	res, err := b.c.send(ctx, b.c.streaming, "GET", streamPath(name)+"/records?"+q.Encode(), h, nil)
	if err != nil {
		cancel()
		var rn *s2api.RangeNotSatisfiableError
		if errors.As(err, &rn) {
			return nil, fmt.Errorf("%s: --seq-num %d is past the tail, which is at seq_num %d (use --clamp to start at the tail)", b.where(name), req.Start.Value, rn.Tail.SeqNum)
		}
		return nil, b.streamErr(name, err)
	}
	return &apiRead{b: b, name: name, req: req, res: res, cancel: cancel, ev: s2api.NewSSEReader(res.Body, maxSSELine)}, nil
}

// apiRead is an SSE read session.
type apiRead struct {
	b      *apiBackend
	name   string
	req    consumer.ReadRequest
	res    *http.Response
	cancel context.CancelFunc
	ev     *s2api.SSEReader
	count  uint64 // records returned
	bytes  uint64 // their metered bytes
	done   bool
}

func (r *apiRead) next(ctx context.Context) ([]consumer.Record, error) {
	for !r.done {
		ev, err := r.ev.Next()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, io.EOF) && !r.req.Follow:
			r.done = true
			continue
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("%s: the daemon ended the read session", r.b.where(r.name))
		case err != nil:
			return nil, fmt.Errorf("%s: reading the daemon's read session: %w", r.b.where(r.name), err)
		}
		switch ev.Event {
		case "batch":
			batch, err := s2api.DecodeReadBatchJSON([]byte(ev.Data), s2api.FormatBase64)
			if err != nil {
				return nil, fmt.Errorf("%s: the daemon's read batch: %w", r.b.where(r.name), err)
			}
			if recs := r.take(batch.Records); len(recs) > 0 {
				return recs, nil
			}
		case "error":
			var info s2api.ErrorInfo
			if json.Unmarshal([]byte(ev.Data), &info) != nil || info.Code == "" {
				info = s2api.ErrorInfo{Code: string(s2api.CodeOther), Message: ev.Data}
			}
			de := &daemonError{Method: "GET", Path: streamPath(r.name) + "/records", Status: s2api.Code(info.Code).Status(), Err: &s2api.Error{Code: s2api.Code(info.Code), Message: info.Message}}
			return nil, r.b.streamErr(r.name, de)
		}
	}
	return nil, consumer.ErrDone
}

// take applies the read's limits and --skip-commands to a batch; it sets done once a limit
// is reached.
func (r *apiRead) take(in []s2api.SequencedRecord) []consumer.Record {
	var out []consumer.Record
	for i := range in {
		s := &in[i]
		if r.req.Until != nil && s.Timestamp >= *r.req.Until {
			r.done = true
			break
		}
		if r.req.SkipCommands && (&batchfmt.Record{Headers: s.Headers}).IsCommand() {
			continue
		}
		size := uint64(s.MeteredSize())
		if r.req.Bytes != nil && r.bytes+size > *r.req.Bytes {
			r.done = true
			break
		}
		out = append(out, consumer.Record{SeqNum: s.SeqNum, Timestamp: s.Timestamp, Headers: s.Headers, Body: s.Body})
		r.count++
		r.bytes += size
		if r.req.Count != nil && r.count >= *r.req.Count {
			r.done = true
			break
		}
	}
	return out
}

func (r *apiRead) close() {
	if r.res != nil {
		r.cancel()
		_ = r.res.Body.Close()
	}
}
