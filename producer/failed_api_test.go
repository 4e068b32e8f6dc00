package producer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// After the producer failed on ErrConditionsUnsupported (several uploaders refused at once,
// appends and Flushes in flight), every ticket resolves with the error, nothing hangs, and
// Append/AppendSync/Submit/Close report the failure. Run with -race.
func TestConditionsUnsupportedConcurrentFailure(t *testing.T) {
	for round := 0; round < 20; round++ {
		store := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrConditionsUnsupported, n: 1 << 30}
		cfg := testConfig(store)
		cfg.FlushInterval = FlushEveryAppend
		cfg.UploadConcurrency = 8
		cfg.DeliveryTimeout = time.Hour
		p := newProducer(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var tickets []*Ticket
		for g := 0; g < 8; g++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					tk, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})
					if err != nil {
						if !errors.Is(err, objectstore.ErrConditionsUnsupported) {
							t.Errorf("Append: %v", err)
						}
						return
					}
					mu.Lock()
					tickets = append(tickets, tk)
					mu.Unlock()
				}
			}()
			go func() {
				defer wg.Done()
				if err := p.Flush(ctx); err != nil && !errors.Is(err, objectstore.ErrConditionsUnsupported) {
					t.Errorf("Flush: %v", err)
				}
			}()
		}
		wg.Wait()
		for _, tk := range tickets {
			if _, err := tk.Wait(ctx); !errors.Is(err, objectstore.ErrConditionsUnsupported) || errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("ticket: %v", err)
			}
		}
		if _, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("y")}}}); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Errorf("AppendSync after the failure: %v", err)
		}
		if _, err := p.Submit(ctx, batchfmt.Record{Body: []byte("z")}); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Errorf("Submit after the failure: %v", err)
		}
		if err := p.Close(ctx); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Errorf("Close: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("round %d: something waited for the 10 s context", round)
		}
		cancel()
	}
}

// Flush returns an error when the producer failed (as documented), both a Flush in progress
// when the failure happens and one after it (they returned nil: no batch was pending).
func TestFlushAfterFailure(t *testing.T) {
	store := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrConditionsUnsupported, n: 1 << 30}
	cfg := testConfig(store)
	p := newProducer(t, cfg)
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Append(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	ferr := p.Flush(ctx) // in progress when the upload is refused
	err := p.Flush(ctx)  // after
	if ferr == nil || err == nil {
		t.Errorf("Flush during the failure: %v; Flush after: %v; want the producer's failure (doc: Flush returns an error when the producer failed)", ferr, err)
	}
}
