package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/s2api"
)

// apiAppendQueue is how many appends an apiAppender holds before submit waits.
const apiAppendQueue = 64

// errPrecedingAppend fails the appends queued behind one that failed: they are not sent.
var errPrecedingAppend = errors.New("not sent: an earlier append failed")

func (b *apiBackend) openAppender(ctx context.Context, name string, o appendOptions) (appender, error) {
	if o.committer != "" {
		return nil, fmt.Errorf("--committer needs a store (--store): through a daemon (--endpoint) the daemon commits")
	}
	if o.create {
		// S2's API has no create-on-append of its own here (it is the basin's setting):
		// create the stream with the default configuration, unless it exists.
		s2 := toS2Config(manifest.DefaultConfig())
		err := b.c.call(ctx, "POST", "/streams", b.header(), s2api.CreateStreamRequest{Stream: name, Config: &s2}, nil)
		if err != nil && daemonCode(err) != s2api.CodeResourceAlreadyExists {
			return nil, b.streamErr(name, err)
		}
	}
	// A missing stream is named by the first append's refusal (a check-tail first would
	// need an operation that a token made to append may not have).
	a := &apiAppender{b: b, name: name, timeout: o.deliveryTimeout, queue: make(chan *apiTicket, apiAppendQueue), done: make(chan struct{})}
	go a.run()
	return a, nil
}

// apiAppender sends appends one at a time, in order, from its own goroutine, so that the
// command reads stdin while an append is on its way (S2's unary appends are not ordered
// among concurrent calls: one in flight keeps the acks in order). After a failure the
// appends behind it are not sent.
type apiAppender struct {
	b       *apiBackend
	name    string
	timeout time.Duration // each append's bound; 0: none
	queue   chan *apiTicket
	done    chan struct{} // closed when run returns
}

type apiTicket struct {
	in   batchfmt.AppendInput
	ack  ackJSON
	err  error
	done chan struct{}
}

func (t *apiTicket) wait() (ackJSON, error) {
	<-t.done
	return t.ack, t.err
}

func (a *apiAppender) submit(in batchfmt.AppendInput) (ackWaiter, error) {
	t := &apiTicket{in: in, done: make(chan struct{})}
	a.queue <- t
	return t, nil
}

// close waits for the appends submitted.
func (a *apiAppender) close() error {
	close(a.queue)
	<-a.done
	return nil
}

func (a *apiAppender) run() {
	defer close(a.done)
	var failed bool
	for t := range a.queue {
		if failed {
			t.err = errPrecedingAppend
			close(t.done)
			continue
		}
		// Not the command's context: on SIGINT what was read is still appended, as on a
		// store; --delivery-timeout bounds it.
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if a.timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, a.timeout)
		}
		t.ack, t.err = a.b.post(ctx, a.name, t.in)
		cancel()
		if errors.Is(t.err, context.DeadlineExceeded) {
			t.err = fmt.Errorf("%s: the append was not acknowledged within --delivery-timeout %v (it may or may not be in the stream)", a.b.where(a.name), a.timeout)
		}
		failed = t.err != nil
		close(t.done)
	}
}
