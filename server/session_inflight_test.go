package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// stuckAppends is a backend whose append sessions take every input and never acknowledge
// one until the session ends: it counts the inputs handed over.
type stuckAppends struct {
	server.Backend
	mu       sync.Mutex
	handed   int
	received chan struct{} // a token per input handed over
}

func (b *stuckAppends) OpenAppends() server.Appends { return stuckSession{b} }

type stuckSession struct{ b *stuckAppends }

func (s stuckSession) Append(ctx context.Context, basin, stream string, in batchfmt.AppendInput) (func(context.Context) (s2api.AppendAck, error), error) {
	b := s.b
	b.mu.Lock()
	b.handed++
	b.mu.Unlock()
	b.received <- struct{}{}
	return func(wctx context.Context) (s2api.AppendAck, error) {
		<-wctx.Done()
		return s2api.AppendAck{}, wctx.Err()
	}, nil
}

// TestAppendSessionInFlightBound: an append session hands at most 256 inputs to the backend
// before their acks are written, however many the client sends (not 258, as when the reader
// handed an input over before it had room to queue its wait).
func TestAppendSessionInFlightBound(t *testing.T) {
	const bound = 256
	b := &stuckAppends{Backend: newEngineBackend(t), received: make(chan struct{}, 4*bound)}
	env := servertest.Start(t, func(testing.TB) server.Backend { return b })
	env.CreateStream(t, "s")
	sess := env.OpenAppendSession(t, "s")
	go func() {
		for range 3 * bound {
			if !sess.Send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}}) {
				return
			}
		}
	}()
	for range bound {
		<-b.received
	}
	// The session now holds the bound; give it every chance to take one more. (A wait for
	// an event that must not happen: the test passes after it, and fails early if it comes.)
	select {
	case <-b.received:
		b.mu.Lock()
		n := b.handed
		b.mu.Unlock()
		t.Fatalf("the session handed over %d inputs without an ack, want at most %d", n, bound)
	case <-time.After(300 * time.Millisecond):
	}
}
