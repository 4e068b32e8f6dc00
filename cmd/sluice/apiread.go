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
	"time"

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
// A following read resumes a session that the daemon ends (a restart) after the last record
// it got.
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
	// --count, --bytes and --until are applied here, not sent: the daemon would end the
	// session before the record that tells a following read it is done, and the read
	// would take that for an early end and resume.
	if !req.Follow {
		q.Set("wait", "0")
	}
	if req.Count != nil && *req.Count == 0 {
		return &apiRead{done: true}, nil
	}
	r := &apiRead{b: b, name: name, req: req, query: q}
	if err := r.open(ctx); err != nil {
		var rn *s2api.RangeNotSatisfiableError
		if errors.As(err, &rn) {
			return nil, fmt.Errorf("%s: --seq-num %d is past the tail, which is at seq_num %d (use --clamp to start at the tail)", b.where(name), req.Start.Value, rn.Tail.SeqNum)
		}
		return nil, b.streamErr(name, err)
	}
	return r, nil
}

// open starts the session, or, after the first, resumes it after the last record seen.
func (r *apiRead) open(ctx context.Context) error {
	q := url.Values{}
	for k, v := range r.query {
		q[k] = v
	}
	if r.resume != nil {
		for _, k := range []string{"seq_num", "timestamp", "tail_offset", "clamp"} {
			q.Del(k)
		}
		q.Set("seq_num", strconv.FormatUint(*r.resume, 10))
		q.Set("clamp", "true") // the stream's tail cannot be before a record read
	}
	ctx, cancel := context.WithCancel(ctx)
	h := r.b.header()
	h.Set("Accept", "text/event-stream")
	res, err := r.b.c.send(ctx, r.b.c.streaming, "GET", streamPath(r.name)+"/records?"+q.Encode(), h, nil)
	if err != nil {
		cancel()
		return err
	}
	r.close()
	r.res, r.cancel, r.ev = res, cancel, s2api.NewSSEReader(res.Body, maxSSELine)
	return nil
}

// resumeFor is how long a following read tries to resume a session that the daemon ended
// (a restart, a shutting-down daemon's 503) before it fails.
const resumeFor = time.Minute

// reopen resumes a following session after a retryable end, retrying with backoff for up to
// resumeFor; why is the end, returned if it cannot.
func (r *apiRead) reopen(ctx context.Context, why error) error {
	deadline := time.Now().Add(resumeFor)
	backoff := 100 * time.Millisecond
	for {
		r.b.log.Warn("the daemon ended the read session; resuming it", "stream", r.name, "basin", r.b.basin, "after", r.lastSeq(), "cause", why)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		err := r.open(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retryable(err) || time.Now().After(deadline) {
			return r.b.streamErr(r.name, err)
		}
		why, backoff = err, min(2*backoff, 5*time.Second)
	}
}

func (r *apiRead) lastSeq() any {
	if r.resume == nil {
		return "none"
	}
	return *r.resume - 1
}

// retryable reports whether a session's end or a failed call may pass: the daemon could not
// be reached, or answered that it is unavailable for now.
func retryable(err error) bool {
	var de *daemonError
	if !errors.As(err, &de) {
		return !errors.Is(err, context.Canceled)
	}
	switch daemonCode(err) {
	case s2api.CodeUnavailable, s2api.CodeUpstreamTimeout, s2api.CodeRequestTimeout, s2api.CodeRateLimited:
		return true
	}
	return false
}

// apiRead is an SSE read session.
type apiRead struct {
	b      *apiBackend
	name   string
	req    consumer.ReadRequest
	res    *http.Response
	cancel context.CancelFunc
	ev     *s2api.SSEReader
	query  url.Values // the first session's
	resume *uint64    // the seq_num after the last record seen, once one was
	count  uint64     // records returned
	bytes  uint64     // their metered bytes
	done   bool
}

func (r *apiRead) next(ctx context.Context) ([]consumer.SequencedRecord, error) {
	for !r.done {
		ev, err := r.ev.Next()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, io.EOF) && !r.req.Follow:
			r.done = true
			continue
		case err != nil:
			// A following read resumes a session that ended early (a daemon's restart).
			if err := r.reopen(ctx, err); err != nil {
				return nil, err
			}
			continue
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
			if r.req.Follow && retryable(de) {
				if err := r.reopen(ctx, de); err != nil {
					return nil, err
				}
				continue
			}
			return nil, r.b.streamErr(r.name, de)
		}
	}
	return nil, consumer.ErrDone
}

// take applies the read's limits and --skip-commands to a batch; it sets done once a limit
// is reached.
func (r *apiRead) take(in []s2api.SequencedRecord) []consumer.SequencedRecord {
	var out []consumer.SequencedRecord
	for i := range in {
		s := &in[i]
		next := s.SeqNum + 1
		r.resume = &next
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
		out = append(out, consumer.SequencedRecord{SeqNum: s.SeqNum, Timestamp: s.Timestamp, Headers: s.Headers, Body: s.Body})
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
		r.res = nil
	}
}
