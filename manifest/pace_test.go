package manifest

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

type limited struct {
	objectstore.Store
	perSecond float64
}

func (l limited) KeyWritesPerSecond() float64 { return l.perSecond }

func TestPacerKeepsToTheStoresLimit(t *testing.T) {
	mem := objectstore.NewMemStore()
	if p := NewPacer(mem, nil); p.Interval() != 0 {
		t.Fatalf("a store with no limit paces every %v", p.Interval())
	}
	// Found through a wrapper too (objectstore.Instrument unwraps).
	inst := objectstore.Instrument(limited{mem, 4}, objectstore.ObserverFunc(func(objectstore.OpEvent) {}))
	now := time.Unix(1000, 0)
	p := NewPacer(inst, func() time.Time { return now })
	if p.Interval() != 250*time.Millisecond {
		t.Fatalf("interval %v for 4 writes a second, want 250ms", p.Interval())
	}
	ctx := context.Background()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("first write waits: %v", err)
	}
	p.Wrote()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Wait(cancelled); err == nil {
		t.Fatal("a write right after another did not wait")
	}
	now = now.Add(250 * time.Millisecond)
	if err := p.Wait(cancelled); err != nil {
		t.Fatalf("a write one interval later waits: %v", err)
	}
}
