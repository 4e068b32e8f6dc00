package server

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
)

const (
	ctS2S           = "s2s/proto"
	ctProto         = "application/protobuf"
	ctXProto        = "application/x-protobuf"
	ctJSON          = "application/json"
	ctSSE           = "text/event-stream"
	hdrStreamConfig = "S2-Stream-Config"
)

func mediaType(h string) string {
	t, _, _ := strings.Cut(h, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// accepts reports whether the Accept header lists the media type t.
func accepts(r *http.Request, t string) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mediaType(part) == t {
				return true
			}
		}
	}
	return false
}

func isProto(t string) bool { return t == ctProto || t == ctXProto }

// withAutoCreate runs op; if it fails with stream_not_found and the basin creates streams on
// append (onAppend) or on read, it creates the stream (with the S2-Stream-Config header's
// config, if any) and runs op once more.
func (s *Server) withAutoCreate(q *request, onAppend bool, op func() error) error {
	err := op()
	if !errors.Is(err, s2api.ErrStreamNotFound) {
		return err
	}
	bc, berr := s.b.GetBasinConfig(q.ctx, q.basin)
	if berr != nil {
		return err
	}
	if (onAppend && !bc.CreateStreamOnAppend) || (!onAppend && !bc.CreateStreamOnRead) {
		return err
	}
	var cfg s2api.StreamConfig
	if h := q.r.Header.Get(hdrStreamConfig); h != "" {
		c, cerr := s2api.DecodeStreamConfigJSON([]byte(h))
		if cerr != nil {
			return &s2api.Error{Code: s2api.CodeBadHeader, Message: "S2-Stream-Config: " + cerr.Error(), Err: cerr}
		}
		cfg = c
	}
	if _, cerr := s.b.CreateStream(q.ctx, q.basin, q.name, cfg); cerr != nil && !errors.Is(cerr, s2api.ErrAlreadyExists) {
		return cerr
	}
	s.log.Debug("created stream on demand", "basin", q.basin, "stream", q.name, "on_append", onAppend)
	return op()
}

func (s *Server) checkTail(q *request) {
	var tail s2api.StreamPosition
	err := s.withAutoCreate(q, false, func() error {
		var err error
		tail, err = s.b.CheckTail(q.ctx, q.basin, q.name)
		return err
	})
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusOK, s2api.TailResponse{Tail: tail})
}

func (s *Server) doAppend(q *request, in batchfmt.AppendInput) (s2api.AppendAck, error) {
	if err := in.Validate(); err != nil {
		return s2api.AppendAck{}, err
	}
	if err := s.checkAppend(q, in); err != nil {
		return s2api.AppendAck{}, err
	}
	var ack s2api.AppendAck
	err := s.withAutoCreate(q, true, func() error {
		var err error
		ack, err = s.b.Append(q.ctx, q.basin, q.name, in)
		return err
	})
	return ack, err
}

func (s *Server) append(q *request) {
	ct := mediaType(q.r.Header.Get("Content-Type"))
	if ct == ctS2S {
		s.appendSession(q)
		return
	}
	body, err := s.readBody(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	var in batchfmt.AppendInput
	if isProto(ct) {
		in, err = s2api.DecodeAppendInputProto(body)
	} else {
		in, err = s2api.DecodeAppendInputJSON(body, q.format)
	}
	if err != nil {
		writeError(q.w, err)
		return
	}
	ack, err := s.doAppend(q, in)
	if err != nil {
		writeError(q.w, err)
		return
	}
	if accepts(q.r, ctProto) || (isProto(ct) && !accepts(q.r, ctJSON)) {
		q.w.Header().Set("Content-Type", ctProto)
		q.w.WriteHeader(http.StatusOK)
		_, _ = q.w.Write(s2api.AppendAppendAckProto(nil, &ack))
		return
	}
	writeJSON(q.w, http.StatusOK, ack)
}

// responseCompression picks the compression of S2S frames from Accept-Encoding.
func responseCompression(r *http.Request) s2api.Compression {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			switch mediaType(part) {
			case "zstd":
				return s2api.CompressionZstd
			case "gzip":
				return s2api.CompressionGzip
			}
		}
	}
	return s2api.CompressionNone
}

// compressThreshold is the smallest frame body worth compressing.
const compressThreshold = 1024

// frameWriter writes S2S frames with a deadline per write, cleared once the write is done: on
// HTTP/2 a deadline that passes resets the stream even with nothing being written, and a
// session may idle for longer than the timeout (an append session between its client's
// appends, a read session between heartbeats when the timeout is the shorter). A client that
// stops reading is caught by the deadline of the write that its flow-control window stalls.
type frameWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	comp  s2api.Compression
	tmo   time.Duration
	buf   []byte
	proto []byte
}

func (fw *frameWriter) write(f s2api.Frame) error {
	if !f.Terminal && len(f.Body) >= compressThreshold {
		f.Compression = fw.comp
	}
	var err error
	fw.buf, err = s2api.AppendFrame(fw.buf[:0], f)
	if err != nil {
		return err
	}
	_ = fw.rc.SetWriteDeadline(time.Now().Add(fw.tmo))
	defer func() { _ = fw.rc.SetWriteDeadline(time.Time{}) }()
	if _, err := fw.w.Write(fw.buf); err != nil {
		return err
	}
	return fw.rc.Flush()
}

func (s *Server) openCursor(q *request, start s2api.ReadStart) (ReadCursor, error) {
	var cur ReadCursor
	err := s.withAutoCreate(q, false, func() error {
		var err error
		cur, err = s.b.Read(q.ctx, q.basin, q.name, start)
		return err
	})
	return cur, err
}

func (s *Server) read(q *request) {
	req, err := s2api.ParseReadQuery(q.r.URL.Query())
	if err != nil {
		writeError(q.w, err)
		return
	}
	var sk sink
	switch {
	case mediaType(q.r.Header.Get("Content-Type")) == ctS2S:
		sk = &s2sSink{}
	case accepts(q.r, ctSSE):
		sse := &sseSink{format: q.format}
		sk = sse
		if id := q.r.Header.Get("Last-Event-ID"); id != "" {
			last, n, nb, err := s2api.ParseBatchEventID(id)
			if err != nil {
				writeError(q.w, err)
				return
			}
			if last == math.MaxUint64 { // no record can follow it; last+1 would wrap to 0
				writeError(q.w, s2api.Errorf(s2api.CodeBadHeader, "Last-Event-ID: seq_num %d has no successor", last))
				return
			}
			// The ids this session sends go on counting from the resumed one's totals,
			// so that it can be resumed in its turn.
			sse.baseRecords, sse.baseBytes = n, nb
			next := last + 1
			req.Start = s2api.ReadStart{SeqNum: &next, Clamp: req.Start.Clamp}
			if req.Count != nil {
				c := sub(*req.Count, n)
				req.Count = &c
			}
			if req.Bytes != nil {
				b := sub(*req.Bytes, nb)
				req.Bytes = &b
			}
		}
	default:
		s.unaryRead(q, req)
		return
	}
	cur, err := s.openCursor(q, req.Start)
	if err != nil {
		writeError(q.w, err)
		return
	}
	defer cur.Close()
	s.readSession(q, req, cur, sk)
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func limitFor(count, bytes *uint64) ReadLimit {
	lim := ReadLimit{Records: s2api.MaxUnaryRecords, Bytes: s2api.MaxUnaryBytes}
	if count != nil && *count < uint64(lim.Records) {
		lim.Records = int(*count)
	}
	if bytes != nil && *bytes < uint64(lim.Bytes) {
		lim.Bytes = int(*bytes)
	}
	return lim
}

// fitBytes drops the records past max metered bytes; it reports whether it dropped any.
func fitBytes(b *s2api.ReadBatch, max uint64) bool {
	var n uint64
	for i := range b.Records {
		n += uint64(b.Records[i].MeteredSize())
		if n > max {
			b.Records = b.Records[:i]
			return true
		}
	}
	return false
}

// cutUntil drops the records at or after until; it reports whether it dropped any.
func cutUntil(b *s2api.ReadBatch, until *uint64) bool {
	if until == nil {
		return false
	}
	for i := range b.Records {
		if b.Records[i].Timestamp >= *until {
			b.Records = b.Records[:i]
			return true
		}
	}
	return false
}

func (s *Server) unaryRead(q *request, req s2api.ReadRequest) {
	// The request has no body to wait for, and a long poll may outlast the read deadline
	// ServeHTTP set: on HTTP/1.1, that deadline passing would cancel the request.
	_ = http.NewResponseController(q.w).SetReadDeadline(time.Time{})
	cur, err := s.openCursor(q, req.Start)
	if err != nil {
		writeError(q.w, err)
		return
	}
	defer cur.Close()
	lim := limitFor(req.Count, req.Bytes)
	batch, err := cur.Next(q.ctx, lim, false)
	if err == nil && len(batch.Records) == 0 && req.UnaryWait() > 0 {
		wctx, cancel := context.WithTimeout(q.ctx, req.UnaryWait())
		b2, err2 := cur.Next(wctx, lim, true)
		timedOut := wctx.Err() == context.DeadlineExceeded
		cancel()
		switch {
		case err2 == nil:
			batch = b2
		case q.ctx.Err() == nil && timedOut:
			// The wait ran out: answer with the empty batch.
		default:
			err = err2
		}
	}
	if err != nil {
		writeError(q.w, err)
		return
	}
	fitBytes(&batch, uint64(lim.Bytes))
	cutUntil(&batch, req.Until)
	if batch.Records == nil {
		batch.Records = []s2api.SequencedRecord{}
	}
	if accepts(q.r, ctProto) {
		q.w.Header().Set("Content-Type", ctProto)
		q.w.WriteHeader(http.StatusOK)
		_, _ = q.w.Write(s2api.AppendReadBatchProto(nil, &batch))
		return
	}
	q.w.Header().Set("Content-Type", ctJSON)
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write(s2api.EncodeReadBatchJSON(&batch, q.format))
}

// sink is where a read session's events go: SSE or S2S.
type sink interface {
	start(s *Server, q *request) error
	batch(b *s2api.ReadBatch, totalRecords, totalBytes uint64) error
	heartbeat(tail s2api.StreamPosition) error
	fail(err error)
	// failWithin is fail with a write deadline of d instead of the write timeout.
	failWithin(err error, d time.Duration)
}

type sseSink struct {
	s      *Server
	rc     *http.ResponseController
	sse    *s2api.SSEWriter
	format s2api.Format
	// What the session resumed from (Last-Event-ID) had delivered: the totals in event ids
	// count from there.
	baseRecords, baseBytes uint64
}

func (k *sseSink) start(s *Server, q *request) error {
	k.s = s
	k.rc = http.NewResponseController(q.w)
	_ = k.rc.SetReadDeadline(time.Time{})
	h := q.w.Header()
	h.Set("Content-Type", ctSSE)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	q.w.WriteHeader(http.StatusOK)
	k.sse = s2api.NewSSEWriter(q.w)
	return k.rc.Flush()
}

func (k *sseSink) batch(b *s2api.ReadBatch, totalRecords, totalBytes uint64) error {
	_ = k.rc.SetWriteDeadline(time.Now().Add(k.s.opts.writeTimeout))
	defer k.clearDeadline()
	var err error
	if n := len(b.Records); n > 0 {
		err = k.sse.Batch(b, k.format, b.Records[n-1].SeqNum, k.baseRecords+totalRecords, k.baseBytes+totalBytes)
	} else {
		err = k.sse.Event("batch", "", s2api.EncodeReadBatchJSON(b, k.format))
	}
	if err != nil {
		return err
	}
	return k.rc.Flush()
}

func (k *sseSink) heartbeat(tail s2api.StreamPosition) error {
	_ = k.rc.SetWriteDeadline(time.Now().Add(k.s.opts.writeTimeout))
	defer k.clearDeadline()
	if err := k.sse.Ping(uint64(k.s.opts.now().UnixMilli()), &tail); err != nil {
		return err
	}
	return k.rc.Flush()
}

// clearDeadline clears the write deadline once a write is done: on HTTP/2 a deadline that
// passes resets the stream even with nothing being written, and a session may idle for longer
// than the timeout between heartbeats.
func (k *sseSink) clearDeadline() { _ = k.rc.SetWriteDeadline(time.Time{}) }

func (k *sseSink) fail(err error) { k.failWithin(err, k.s.opts.writeTimeout) }

func (k *sseSink) failWithin(err error, d time.Duration) {
	_ = k.rc.SetWriteDeadline(time.Now().Add(d))
	if k.sse.Error(err) == nil {
		_ = k.rc.Flush()
	}
}

type s2sSink struct {
	fw  *frameWriter
	buf []byte
}

func (k *s2sSink) start(s *Server, q *request) error {
	rc := http.NewResponseController(q.w)
	_ = rc.SetReadDeadline(time.Time{})
	q.w.Header().Set("Content-Type", ctS2S)
	q.w.WriteHeader(http.StatusOK)
	k.fw = &frameWriter{w: q.w, rc: rc, comp: responseCompression(q.r), tmo: s.opts.writeTimeout}
	return rc.Flush()
}

func (k *s2sSink) batch(b *s2api.ReadBatch, _, _ uint64) error {
	k.buf = s2api.AppendReadBatchProto(k.buf[:0], b)
	return k.fw.write(s2api.Frame{Body: k.buf})
}

func (k *s2sSink) heartbeat(tail s2api.StreamPosition) error {
	return k.batch(&s2api.ReadBatch{Tail: &tail}, 0, 0)
}

func (k *s2sSink) fail(err error) { _ = k.fw.write(s2api.TerminalErrorFrame(err)) }

func (k *s2sSink) failWithin(err error, d time.Duration) {
	tmo := k.fw.tmo
	k.fw.tmo = min(tmo, d)
	k.fail(err)
	k.fw.tmo = tmo
}

// failClosing ends a read session that the server's Close interrupted, while its client is
// still there, with a retryable error (503 unavailable: S2's SDK reads an SSE error event or
// a terminal frame so, and retries from where it was), so that a client following the stream
// does not take the end of the response for the end of its read. It is best effort: the
// write gets a second at most, so that a client that stopped reading does not hold up Close.
func (s *Server) failClosing(q *request, sk sink) {
	if err := s.endedByAccess(q); err != nil { // the token was revoked or expired
		sk.failWithin(err, min(s.opts.writeTimeout, time.Second))
		return
	}
	if s.ctx.Err() != nil && q.r.Context().Err() == nil {
		err := &s2api.Error{Code: s2api.CodeUnavailable, Message: "server is shutting down", Err: ErrClosed}
		s.logFailure(q.r, q.route, err)
		sk.failWithin(err, min(s.opts.writeTimeout, time.Second))
	}
}

// readSession streams batches to sk until a limit is reached, the session has been idle for
// its wait, the client goes away or the server closes. When it catches up with the tail it
// sends a batch (empty if need be) whose tail is the next position; while idle it sends a
// heartbeat every heartbeat interval.
func (s *Server) readSession(q *request, req s2api.ReadRequest, cur ReadCursor, sk sink) {
	kind := "s2s_read"
	if _, ok := sk.(*sseSink); ok {
		kind = "sse"
	}
	s.sessions.WithLabelValues(kind).Inc()
	defer s.sessions.WithLabelValues(kind).Dec()
	if err := sk.start(s, q); err != nil {
		return
	}
	idle, idleBounded := req.SessionIdle()
	var remCount, remBytes *uint64
	if req.Count != nil {
		c := *req.Count
		remCount = &c
	}
	if req.Bytes != nil {
		b := *req.Bytes
		remBytes = &b
	}
	var totalRecords, totalBytes uint64
	caughtUp := false
	var tail s2api.StreamPosition
	for {
		if (remCount != nil && *remCount == 0) || (remBytes != nil && *remBytes == 0) {
			return
		}
		lim := limitFor(remCount, remBytes)
		b, err := cur.Next(q.ctx, lim, false)
		if err != nil {
			if q.ctx.Err() == nil {
				s.logFailure(q.r, q.route, err)
				sk.fail(err)
			} else {
				s.failClosing(q, sk)
			}
			return
		}
		tail = *b.Tail
		if len(b.Records) == 0 {
			if !caughtUp {
				if err := sk.batch(&s2api.ReadBatch{Records: []s2api.SequencedRecord{}, Tail: &tail}, totalRecords, totalBytes); err != nil {
					return
				}
				caughtUp = true
			}
			if idleBounded && idle == 0 {
				return
			}
			deadline := time.Now().Add(idle)
			for len(b.Records) == 0 {
				wait := s.opts.heartbeat
				if idleBounded {
					left := time.Until(deadline)
					if left <= 0 {
						return
					}
					wait = min(wait, left)
				}
				wctx, cancel := context.WithTimeout(q.ctx, wait)
				b, err = cur.Next(wctx, lim, true)
				timedOut := wctx.Err() == context.DeadlineExceeded
				cancel()
				if err != nil {
					if q.ctx.Err() != nil {
						s.failClosing(q, sk)
						return
					}
					if timedOut {
						if idleBounded && !time.Now().Before(deadline) {
							return
						}
						if err := sk.heartbeat(tail); err != nil {
							return
						}
						b = s2api.ReadBatch{}
						continue
					}
					s.logFailure(q.r, q.route, err)
					sk.fail(err)
					return
				}
				tail = *b.Tail
			}
		}
		ended := fitBytes(&b, uint64(lim.Bytes)) // only a bytes bound can drop records here
		ended = cutUntil(&b, req.Until) || ended
		if n := len(b.Records); n > 0 {
			sz := uint64(b.MeteredSize())
			totalRecords += uint64(n)
			totalBytes += sz
			if remCount != nil {
				*remCount = sub(*remCount, uint64(n))
			}
			if remBytes != nil {
				*remBytes = sub(*remBytes, sz)
			}
			caughtUp = b.Records[n-1].SeqNum+1 == b.Tail.SeqNum
			if err := sk.batch(&b, totalRecords, totalBytes); err != nil {
				return
			}
		}
		if ended {
			return
		}
	}
}
