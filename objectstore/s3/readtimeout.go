package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// idleWatch is the HTTP client behind Config.ReadTimeout: it fails a request once the
// server has been silent for the timeout while the client waits on it. The clock runs from
// the request's start, is reset by every read of the request body (the server taking the
// upload) and of the response body (the server sending), and is stopped while the client is
// not waiting on the server: while the request waits for a free connection of the client's
// own (dialing one counts), while the caller's body source produces the next bytes of the
// upload, and while nobody reads the response body. Time a connection spent idle in the
// pool before the request does not count either, unlike a read deadline on the connection
// (the SDK's BuildableClient.WithReadTimeout), which Go's transport arms as soon as the
// previous response ends: a request on a connection idle for most of the timeout then failed
// while the server was answering well within it.
type idleWatch struct {
	next    aws.HTTPClient
	timeout time.Duration
}

// errIdle is what a request cut by idleWatch fails with.
type errIdle struct{ timeout time.Duration }

func (e *errIdle) Error() string {
	return fmt.Sprintf("objectstore: s3: no byte from the server for %v (read_timeout)", e.timeout)
}

// Timeout tells the SDK's retryer (for the calls it retries) that this is a timeout.
func (e *errIdle) Timeout() bool { return true }

// Do implements aws.HTTPClient.
func (c *idleWatch) Do(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	w := &watchdog{timeout: c.timeout, cancel: cancel, last: time.Now(), waiting: 1}
	w.mu.Lock()
	w.timer = time.AfterFunc(c.timeout, w.check)
	w.armed = true
	w.mu.Unlock()

	// Waiting for a connection is not the server's silence, but dialing one is.
	var queued atomic.Bool
	unqueue := func() {
		if queued.CompareAndSwap(true, false) {
			w.progress(1)
		}
	}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) {
			if queued.CompareAndSwap(false, true) {
				w.progress(-1)
			}
		},
		ConnectStart: func(string, string) { unqueue() },
		GotConn:      func(httptrace.GotConnInfo) { unqueue() },
	})
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &uploadBody{ReadCloser: req.Body, w: w}
		if get := req.GetBody; get != nil {
			req.GetBody = func() (io.ReadCloser, error) {
				b, err := get()
				if err != nil || b == nil || b == http.NoBody {
					return b, err
				}
				return &uploadBody{ReadCloser: b, w: w}, nil
			}
		}
	}
	resp, err := c.next.Do(req)
	unqueue()
	if err != nil {
		fired := w.stop()
		cancel()
		if fired {
			return nil, &errIdle{c.timeout}
		}
		return nil, err
	}
	w.progress(-1) // the answer has begun; from now on only the body's reads count
	resp.Body = &watchedBody{rc: resp.Body, w: w}
	return resp, nil
}

// watchdog is one request's clock of the server's silence.
type watchdog struct {
	timeout time.Duration
	cancel  context.CancelFunc

	mu      sync.Mutex
	timer   *time.Timer
	armed   bool      // timer is set to run check
	last    time.Time // the last sign of the server, or the start of a wait
	waiting int       // how many wait on the server: the request until it is answered, body reads
	fired   bool
	stopped bool
}

// check runs on the timer: it cuts the request if someone has waited on the server for the
// whole timeout since its last sign, and otherwise re-arms for the rest.
func (w *watchdog) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if w.stopped || w.waiting == 0 {
		return // a read re-arms it
	}
	if idle := time.Since(w.last); idle < w.timeout {
		w.timer.Reset(w.timeout - idle)
		w.armed = true
		return
	}
	w.fired = true
	w.cancel()
}

// progress records a sign of the server and adds delta to the waiters.
func (w *watchdog) progress(delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = time.Now()
	w.waiting += delta
	if w.waiting > 0 && !w.armed && !w.stopped && !w.fired {
		w.timer.Reset(w.timeout)
		w.armed = true
	}
}

// stop ends the watch and reports whether it had cut the request.
func (w *watchdog) stop() (fired bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
	return w.fired
}

func (w *watchdog) hasFired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// uploadBody is a request body whose reads show that the server takes the upload (the
// transport reads it as the connection drains); the time the source takes to produce the
// bytes is the caller's, not the server's.
type uploadBody struct {
	io.ReadCloser
	w *watchdog
}

func (b *uploadBody) Read(p []byte) (int, error) {
	b.w.progress(-1)
	n, err := b.ReadCloser.Read(p)
	b.w.progress(1)
	return n, err
}

// watchedBody is a response body: the server's silence counts only during its reads.
type watchedBody struct {
	rc io.ReadCloser
	w  *watchdog
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.w.progress(1)
	n, err := b.rc.Read(p)
	b.w.progress(-1)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		// The transport has put the connection back in its pool before the body gives
		// io.EOF, so ending the request's context now only lets go of it.
		b.w.stop()
		b.w.cancel()
	case b.w.hasFired():
		err = &errIdle{b.w.timeout}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.w.stop()
	err := b.rc.Close()
	b.w.cancel()
	return err
}
