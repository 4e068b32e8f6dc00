package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
	"github.com/sluice-dev/sluice/producer"
)

// Result is what a run did and what its checks found.
type Result struct {
	Scenario Scenario
	// Violations are broken invariants; a correct system has none.
	Violations []error
	// Trace is the end of the run's event log (crashes, late writes, errors), for replay.
	Trace []string

	Appended, Acked, Present   int // records
	Expired                    int // records of appends that failed with ErrDeliveryTimeout
	CommitterCommits, Lost     int // requests a committer committed; requests or replies lost
	ProducerInstances, Crashes int
	LateWrites                 int64
	Faults                     faultstore.Counts
	Members, Delivered         int // consumer members started, records delivered (with redeliveries)
	Zombies                    int // members replaced while alive
	GCPasses, Deleted          int
	ManifestWrites             int
	MaxEntries, MaxRefs        int
	Segments                   int    // segment references in the final manifest
	Dropped                    uint64 // records the collector dropped (queue mode: consumed)
	// Journal objects in the store at the end: windows committers wrote, and fences of
	// journals sealed by a taker or a direct writer (journal scenarios).
	JournalWindows, JournalFences int
}

// ackedAppend is an append whose ticket resolved with an ack.
type ackedAppend struct {
	bodies []string
	ack    producer.Ack
}

// member is what one consumer group member saw.
type member struct {
	start     uint64 // the group's checkpoint when it joined
	recs      []consumer.SequencedRecord
	ackedThru uint64 // first seq_num not acknowledged by it (start if none)
}

type harness struct {
	sc     Scenario
	base   *objectstore.MemStore
	led    *ledger
	faults *faultstore.Store
	shared objectstore.Store

	late      sync.WaitGroup // producers' writes still in flight (waited for to set the target)
	lateOther sync.WaitGroup // consumers' writes still in flight (waited for at the end)
	lateCount atomic.Int64

	start time.Time // of the run, for the trace's times (virtual under synctest)
	net   *simNet   // carries commit requests to the committers

	mu         sync.Mutex
	events     []string
	appended   map[string]bool
	acked      []ackedAppend
	expired    map[string]bool // records of appends that failed with ErrDeliveryTimeout
	instances  int
	crashes    int
	violations []error
	members    []*member
	gcPasses   int
	zombies    int

	target     uint64        // the final tail, once every producer is done
	targetSet  chan struct{} // closed when target is set
	consumerOK chan struct{} // closed when the consumer reached the target (or gave up)
}

const maxEvents = 400

func (h *harness) event(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, fmt.Sprintf("%8.3fs ", time.Since(h.start).Seconds())+fmt.Sprintf(format, args...))
	if len(h.events) > 2*maxEvents {
		h.events = append(h.events[:0], h.events[len(h.events)-maxEvents:]...)
	}
}

func (h *harness) violate(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	h.event("VIOLATION: %v", err)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.violations = append(h.violations, err)
}

// Run runs the scenario and checks the invariants. It is meant to run inside a
// testing/synctest bubble, where its minutes of backoff, latency and grace periods cost no
// wall-clock time; outside one it works but takes as long as its timers say. ctx bounds the
// run; an error means the harness itself could not run (bad scenario, or the run did not
// finish before ctx ended, which is reported with the trace).
func Run(ctx context.Context, sc Scenario) (Result, error) {
	if err := sc.Validate(); err != nil {
		return Result{Scenario: sc}, err
	}
	h := &harness{sc: sc, start: time.Now(), base: objectstore.NewMemStore(), appended: map[string]bool{}, expired: map[string]bool{},
		targetSet: make(chan struct{}), consumerOK: make(chan struct{})}
	h.led = newLedger(h.base, sc.Stream.ManifestKey())
	h.net = &simNet{h: h, r: rand.New(rand.NewPCG(sc.Seed, 0x4e7)), at: map[string]*committer.Committer{}}
	var err error
	rule := faultstore.Rule{ErrBefore: sc.ErrBefore, ErrAfter: sc.ErrAfter, BodyErr: sc.BodyErr}
	if sc.DelayProb > 0 {
		rule.DelayProb, rule.Delay, rule.DelayJitter = sc.DelayProb, sc.Delay/4, sc.Delay-sc.Delay/4
	}
	h.faults, err = faultstore.New(h.led, sc.Seed, rule)
	if err != nil {
		return Result{Scenario: sc}, err
	}
	h.shared = h.faults

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var producersDone sync.WaitGroup
	for slot := range sc.Producers {
		wg.Add(1)
		producersDone.Add(1)
		go func() {
			defer wg.Done()
			defer producersDone.Done()
			h.runSlot(runCtx, slot)
		}()
	}
	comStop := make(chan struct{})
	var comDone sync.WaitGroup
	for i := range sc.Committers {
		wg.Add(1)
		comDone.Add(1)
		go func() {
			defer wg.Done()
			defer comDone.Done()
			h.runCommitter(runCtx, i, comStop)
		}()
	}
	if sc.Consumer {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(h.consumerOK)
			h.runConsumer(runCtx)
		}()
	} else {
		close(h.consumerOK)
	}
	gcStop := make(chan struct{})
	if sc.GC {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.runGC(runCtx, gcStop)
		}()
	}
	// When every producer is done (and their late writes have landed), the final tail is
	// the consumer's target.
	wg.Add(1)
	go func() {
		defer wg.Done()
		producersDone.Wait()
		close(comStop)
		comDone.Wait()
		h.late.Wait()
		_, view, err := manifest.Open(h.base, sc.Stream.ManifestKey()).LoadView(context.Background())
		if err != nil {
			h.violate("load the manifest after the producers finished: %v", err)
		} else {
			h.target = view.Tail.SeqNum
		}
		h.event("producers done, tail %d", h.target)
		close(h.targetSet)
		<-h.consumerOK
		close(gcStop)
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); h.late.Wait(); h.lateOther.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		cancel()
		<-done
		res := h.result()
		return res, fmt.Errorf("sim: seed %d did not finish: %w", sc.Seed, ctx.Err())
	}
	if sc.sabotage != nil {
		sc.sabotage(h)
	}
	h.finalChecks()
	return h.result(), nil
}

func (h *harness) result() Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	res := Result{Scenario: h.sc, Violations: append([]error(nil), h.violations...),
		ProducerInstances: h.instances, Crashes: h.crashes, LateWrites: h.lateCount.Load(),
		Faults: h.faults.Total(), Members: len(h.members), GCPasses: h.gcPasses, Zombies: h.zombies}
	if n := len(h.events); n > maxEvents {
		res.Trace = append([]string(nil), h.events[n-maxEvents:]...)
	} else {
		res.Trace = append([]string(nil), h.events...)
	}
	res.Appended = len(h.appended)
	res.Expired = len(h.expired)
	h.net.mu.Lock()
	res.CommitterCommits, res.Lost = h.net.committed, h.net.lost
	h.net.mu.Unlock()
	for _, a := range h.acked {
		res.Acked += len(a.bodies)
	}
	for _, m := range h.members {
		res.Delivered += len(m.recs)
	}
	h.led.mu.Lock()
	res.ManifestWrites, res.MaxEntries, res.MaxRefs = h.led.writes, h.led.maxEntries, h.led.maxRefs
	res.Deleted = len(h.led.deleted)
	h.led.mu.Unlock()
	if _, st, err := manifest.Open(h.base, h.sc.Stream.ManifestKey()).LoadView(context.Background()); err == nil {
		res.Present = int(st.Tail.SeqNum - st.FirstSeq())
		res.Dropped = st.FirstSeq()
		res.Segments = len(st.Segments)
	}
	res.JournalWindows, res.JournalFences = h.journalObjects()
	return res
}

// journalObjects counts the windows and fences in the store.
func (h *harness) journalObjects() (windows, fences int) {
	ctx := context.Background()
	_ = objectstore.ListAll(ctx, h.base, journal.Root, func(o objectstore.ObjectInfo) error {
		hd, _, err := journal.ReadIndex(ctx, h.base, o.Key)
		switch {
		case err != nil:
		case hd.Kind == journal.KindFence:
			fences++
		default:
			windows++
		}
		return nil
	})
	return windows, fences
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// isCorruption reports the error classes that mean data was lost or damaged.
func isCorruption(err error) bool {
	return errors.Is(err, consumer.ErrMissingObject) || errors.Is(err, consumer.ErrCorrupt) ||
		errors.Is(err, manifest.ErrCorrupt) || errors.Is(err, batchfmt.ErrCorrupt)
}
