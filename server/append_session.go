package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
)

// sessionInFlight bounds the inputs an append session has handed to the backend and whose
// acks are not yet written (the backend's own backpressure may bound them lower).
const sessionInFlight = 256

// appendWait waits for one input's ack (see AsyncAppender).
type appendWait func(context.Context) (s2api.AppendAck, error)

// submitAppend hands in to the backend and returns the wait for its ack: through as, an
// AsyncAppender's session, or else Backend.Append done at once.
// ok is false when in failed at once: the session reads no further input.
func (s *Server) submitAppend(q *request, ctx context.Context, as Appends, in batchfmt.AppendInput) (wait appendWait, ok bool) {
	fail := func(err error) (appendWait, bool) {
		return func(context.Context) (s2api.AppendAck, error) { return s2api.AppendAck{}, err }, false
	}
	if as == nil {
		ack, err := s.doAppend(q, in)
		return func(context.Context) (s2api.AppendAck, error) { return ack, err }, err == nil
	}
	if err := in.Validate(); err != nil {
		return fail(err)
	}
	if err := s.checkAppend(q, in); err != nil {
		return fail(err)
	}
	err := s.withAutoCreate(q, true, func() error {
		var err error
		wait, err = as.Append(ctx, q.basin, q.name, in)
		return err
	})
	if err != nil {
		return fail(err)
	}
	return wait, true
}

// appendSession reads AppendInput frames and hands each to the backend as it arrives (an
// AsyncAppender's; other backends append each at once), up to sessionInFlight
// unacknowledged, while a second goroutine writes their acks in order: S2's clients pipeline
// a session's inputs and wait a few seconds at most for each ack, which one commit round
// trip per input would exceed. The first failure ends the session with its error frame, and
// nothing handed over after it enters the stream (see Appends; but inputs handed over
// before a client disconnects still commit).
func (s *Server) appendSession(q *request) {
	s.sessions.WithLabelValues("s2s_append").Inc()
	defer s.sessions.WithLabelValues("s2s_append").Dec()
	rc := http.NewResponseController(q.w)
	_ = rc.EnableFullDuplex() // HTTP/1.1 only; HTTP/2 is always full duplex
	body := &sessionBody{r: q.r.Body}
	defer s.endBody(q, rc, body)
	s.runAppendSession(q, rc, body)
}

// runAppendSession is appendSession's work, reading the request body through body.
func (s *Server) runAppendSession(q *request, rc *http.ResponseController, body *sessionBody) {
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	q.w.Header().Set("Content-Type", ctS2S)
	q.w.WriteHeader(http.StatusOK)
	fw := &frameWriter{w: q.w, rc: rc, comp: responseCompression(q.r), tmo: s.opts.writeTimeout}
	if err := rc.Flush(); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(q.ctx)
	defer cancel()
	// Unblock a pending body read when the session ends (the request ends, the server
	// closes, or the ack writer fails). (A read deadline in the past, not closing the body:
	// on HTTP/1.1 Close waits for the pending Read, which an idle client never ends.)
	// The ack writer's cancel can start it while the handler runs: the handler waits for it
	// before returning (the response controller is not to be used after that).
	unblocked := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		if !body.ended() { // past its end, net/http's own read of the connection is pending
			_ = rc.SetReadDeadline(time.Now())
		}
		close(unblocked)
	})
	defer func() {
		if !stop() {
			<-unblocked
		}
	}()

	// The ack writer owns fw. It waits for each input's ack in order and writes it; on the
	// first error it writes the error frame, ends the session (cancel) and then only lets
	// the remaining waits run out, so that the backend can release what they hold.
	//
	// slots holds a token for each input handed to the backend and not yet acknowledged:
	// the reader takes one before it hands an input over, the writer gives it back once the
	// input's ack (or error) is written.
	type pending struct {
		wait appendWait
		slot bool // holds a token of slots
	}
	slots := make(chan struct{}, sessionInFlight)
	waits := make(chan pending, sessionInFlight+1)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		failed := false
		for p := range waits {
			if failed {
				_, _ = p.wait(ctx) // ctx is cancelled: returns at once
			} else {
				ack, err := p.wait(ctx)
				if err == nil {
					fw.proto = s2api.AppendAppendAckProto(fw.proto[:0], &ack)
					err = fw.write(s2api.Frame{Body: fw.proto})
					if err != nil {
						s.log.Debug("append session write failed", "err", err)
					}
				} else if ctx.Err() == nil {
					s.logFailure(q.r, q.route, err)
					_ = fw.write(s2api.TerminalErrorFrame(err))
				}
				if err != nil {
					failed = true
					cancel()
				}
			}
			if p.slot {
				<-slots
			}
		}
	}()
	defer func() {
		close(waits)
		<-writerDone
		if err := s.endedByAccess(q); err != nil { // the token was revoked or expired
			fw.tmo = min(fw.tmo, time.Second)
			_ = fw.write(s2api.TerminalErrorFrame(err))
		}
	}()
	// The queue has room for every token of slots and one error: sending never blocks.
	failWith := func(err error) {
		waits <- pending{wait: func(context.Context) (s2api.AppendAck, error) { return s2api.AppendAck{}, err }}
	}

	var as Appends
	if ab, ok := s.b.(AsyncAppender); ok {
		as = ab.OpenAppends()
	}
	fr := s2api.NewFrameReader(body, s2api.MaxFrameBytes)
	for {
		f, err := fr.Next()
		if err != nil {
			if err == io.EOF || ctx.Err() != nil {
				return
			}
			if errors.Is(err, s2api.ErrFrame) {
				failWith(err)
			}
			s.log.Debug("append session read failed", "err", err)
			return
		}
		if f.Terminal {
			return
		}
		in, err := s2api.DecodeAppendInputProto(f.Body)
		if err != nil {
			failWith(err)
			return
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wait, ok := s.submitAppend(q, ctx, as, in)
		waits <- pending{wait: wait, slot: true}
		if !ok {
			return
		}
	}
}

// sessionBody is a session's request body, noting when a read reaches its end.
type sessionBody struct {
	r   io.Reader
	eof atomic.Bool
}

func (b *sessionBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

// ended reports whether a read reached the body's end.
func (b *sessionBody) ended() bool { return b.eof.Load() }

// endBody leaves nothing of the request body for net/http to read once the handler has
// returned. On HTTP/1.1 in full duplex, net/http reads what a handler left of the body after
// it returns, and if that read reaches the end it starts its background read of the
// connection while it reads the next request: a panic ("invalid concurrent Body.Read call").
// So the session reads what has already arrived of the rest itself, with a read deadline in
// the past that makes every read of the connection fail at once, for net/http's too: the
// end, if it has arrived, is reached here, and otherwise is not reached at all.
func (s *Server) endBody(q *request, rc *http.ResponseController, body *sessionBody) {
	if q.r.ProtoMajor != 1 || body.ended() {
		return
	}
	_ = rc.SetReadDeadline(time.Now())
	_, _ = io.Copy(io.Discard, body)
}
