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
	"github.com/sluice-dev/sluice/consumer"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/faultstore"
	"github.com/sluice-dev/sluice/producer"
)

// Scenario is one simulated run. NewScenario derives every field from a seed; a test may
// change fields before Run.
type Scenario struct {
	Seed         uint64
	ManifestPath string
	DataPrefix   string

	// Producers is the number of producer "slots" writing at once; each slot is a sequence
	// of process instances (a crashed one is replaced by a fresh one with a new producer id)
	// that together make Appends appends of 1..MaxRecords records.
	Producers  int
	Appends    int
	MaxRecords int
	// Pipeline is how many appends a producer keeps unacknowledged at once.
	Pipeline int
	// FlushInterval, UploadConcurrency and MaxGroupBatches configure every producer.
	FlushInterval     time.Duration
	UploadConcurrency int
	MaxGroupBatches   int
	// Timestamps: the probability that a record carries a client timestamp (some in the
	// past, some in the future, so the clamp and the cap are exercised).
	Timestamps float64

	// Crashes: the probability that a process instance (producer or consumer member) is
	// crashed, at a chosen store operation (before it, after it, or with the write in
	// flight) or at a random moment; MaxCrashes bounds the crashes per slot, so every slot
	// ends with a clean Close.
	Crashes    float64
	MaxCrashOp int
	MaxCrashAt time.Duration
	MaxCrashes int

	// Store faults (faultstore.Rule on every operation).
	ErrBefore float64
	ErrAfter  float64
	DelayProb float64
	Delay     time.Duration
	BodyErr   float64
	// LateProb is the probability that a write of a live process is slow: the process gets
	// ErrOutcomeUnknown at once and the write lands up to LateMax later (reordering it with
	// the process's later requests). Writes in flight at a crash land the same way.
	LateProb float64
	LateMax  time.Duration

	// Consumer runs a consumer group member (restarted when it crashes) that reads to the end.
	Consumer bool
	// GC runs collector passes every GCInterval with the given grace period; producers use
	// half of it as their commit deadline.
	GC         bool
	GCInterval time.Duration
	Grace      time.Duration
	// Queue makes the stream a queue (manifest.Config.QueueMode): the collector drops
	// entries once the group's checkpoint passed them, while producers and the consumer run.
	Queue bool
	// FixedIDs: a restarted producer process reuses its slot's producer id (as a service with
	// a configured id would), continuing its batch numbers from the manifest. As
	// producer.Config.ProducerID requires, it waits the commit deadline after a crash first,
	// so that no write of the dead process can still land.
	FixedIDs bool
	// DeliveryTimeout, if set, is every producer's producer.Config.DeliveryTimeout, and
	// appends are handed over with producer.ReceivedAt, as received up to SinceMax
	// earlier (over half of DeliveryTimeout: refused at once). An append that fails with
	// producer.ErrDeliveryTimeout must not be in the stream, nor may any append its
	// instance accepted before that failure.
	DeliveryTimeout time.Duration
	SinceMax        time.Duration

	// sabotage, if set, damages the outcome before the final checks (tests of the checker).
	sabotage func(h *harness)
	// afterGC, if set, damages the store after the final collection (tests of the checker).
	afterGC func(h *harness)
}

// NewScenario draws a small scenario from seed. Every 25th seed is a long one (one producer,
// many single-batch appends) that fills the manifest past its bound so sealing into
// segments runs under faults.
func NewScenario(seed uint64) Scenario {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	sc := Scenario{
		Seed: seed, ManifestPath: "s/manifest", DataPrefix: "s/data",
		Producers:         1 + r.IntN(3),
		Appends:           5 + r.IntN(20),
		MaxRecords:        1 + r.IntN(5),
		Pipeline:          1 + r.IntN(8),
		FlushInterval:     time.Duration(r.IntN(4)) * 5 * time.Millisecond,
		UploadConcurrency: 1 + r.IntN(4),
		MaxGroupBatches:   []int{1, 2, 8, 256}[r.IntN(4)],
		Timestamps:        []float64{0, 0.5, 1}[r.IntN(3)],
		Crashes:           []float64{0, 0.3, 0.7}[r.IntN(3)],
		MaxCrashOp:        1 + r.IntN(30),
		MaxCrashAt:        time.Duration(1+r.IntN(2000)) * time.Millisecond,
		MaxCrashes:        1 + r.IntN(4),
		ErrBefore:         []float64{0, 0.05, 0.15}[r.IntN(3)],
		ErrAfter:          []float64{0, 0.05, 0.15}[r.IntN(3)],
		DelayProb:         []float64{0, 0.2, 0.5}[r.IntN(3)],
		Delay:             time.Duration(1+r.IntN(300)) * time.Millisecond,
		BodyErr:           []float64{0, 0.05}[r.IntN(2)],
		LateProb:          []float64{0, 0.05, 0.2}[r.IntN(3)],
		LateMax:           time.Duration(1+r.IntN(2000)) * time.Millisecond,
		Consumer:          r.IntN(4) != 0,
		GC:                r.IntN(4) != 0,
		GCInterval:        time.Duration(200+r.IntN(2000)) * time.Millisecond,
		Grace:             time.Duration(6+r.IntN(10)) * time.Second,
	}
	sc.Queue = sc.Consumer && sc.GC && r.IntN(3) == 0
	sc.FixedIDs = r.IntN(3) == 0
	if r.IntN(3) == 0 {
		sc.DeliveryTimeout = time.Duration(50+r.IntN(3000)) * time.Millisecond
		sc.SinceMax = []time.Duration{0, sc.DeliveryTimeout / 2, sc.DeliveryTimeout * 2 / 3}[r.IntN(3)]
	}
	if seed%25 == 24 {
		sc.Producers, sc.Appends, sc.MaxRecords, sc.Pipeline = 1, 600+r.IntN(200), 1, 64
		sc.FlushInterval, sc.MaxGroupBatches = 0, 64
		sc.ErrBefore, sc.ErrAfter, sc.DelayProb, sc.LateProb = 0.02, 0.02, 0.05, 0.02
		sc.Crashes, sc.MaxCrashes = 0.5, 2
	}
	return sc
}

// Validate reports every problem of sc at once.
func (sc *Scenario) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("sim: "+format, args...)) }
	if sc.Producers < 1 || sc.Appends < 1 || sc.MaxRecords < 1 || sc.MaxRecords > 1000 || sc.Pipeline < 1 {
		bad("producers %d, appends %d, max records %d, pipeline %d must be >= 1 (records <= 1000)", sc.Producers, sc.Appends, sc.MaxRecords, sc.Pipeline)
	}
	if sc.MaxCrashOp < 1 || sc.MaxCrashAt <= 0 || sc.MaxCrashes < 0 {
		bad("max crash op %d, max crash time %v must be > 0, max crashes %d >= 0", sc.MaxCrashOp, sc.MaxCrashAt, sc.MaxCrashes)
	}
	if sc.LateProb > 0 && sc.LateMax <= 0 {
		bad("late writes need LateMax > 0")
	}
	if sc.DeliveryTimeout < 0 || sc.SinceMax < 0 {
		bad("delivery timeout %v and since max %v must not be negative", sc.DeliveryTimeout, sc.SinceMax)
	}
	if sc.Grace <= 0 || sc.GCInterval <= 0 {
		bad("grace %v and gc interval %v must be > 0", sc.Grace, sc.GCInterval)
	}
	// The collector's safety argument needs a write to land within half the grace period of
	// the producer's deadline check (see package gc).
	if sc.LateMax+sc.Delay >= sc.Grace/2 {
		bad("late writes (%v) plus delay (%v) must land within half the grace period %v", sc.LateMax, sc.Delay, sc.Grace)
	}
	return errors.Join(errs...)
}

// Result is what a run did and what its checks found.
type Result struct {
	Scenario Scenario
	// Violations are broken invariants; a correct system has none.
	Violations []error
	// Trace is the end of the run's event log (crashes, late writes, errors), for replay.
	Trace []string

	Appended, Acked, Present   int // records
	Expired                    int // records of appends that failed with ErrDeliveryTimeout
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
}

// ackedAppend is an append whose ticket resolved with an ack.
type ackedAppend struct {
	bodies []string
	ack    producer.Ack
}

// member is what one consumer group member saw.
type member struct {
	start     uint64 // the group's checkpoint when it joined
	recs      []consumer.Record
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
	h.led = newLedger(h.base, sc.ManifestPath)
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
		h.late.Wait()
		snap, err := manifest.Load(context.Background(), h.base, sc.ManifestPath)
		if err != nil {
			h.violate("load the manifest after the producers finished: %v", err)
		} else {
			h.target = snap.State.Tail.SeqNum
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
	if snap, err := manifest.Load(context.Background(), h.base, h.sc.ManifestPath); err == nil {
		res.Present = int(snap.State.Tail.SeqNum - snap.State.FirstSeq())
		res.Dropped = snap.State.FirstSeq()
		res.Segments = len(snap.State.Segments)
	}
	return res
}

// crashPlan draws whether and how a process instance will crash.
func (h *harness) crashPlan(r *rand.Rand, crashesSoFar int) (killAt int, mode crashMode, after time.Duration) {
	if crashesSoFar >= h.sc.MaxCrashes || r.Float64() >= h.sc.Crashes {
		return 0, 0, 0
	}
	if r.IntN(3) == 0 {
		return 0, 0, time.Duration(r.Int64N(int64(h.sc.MaxCrashAt)) + 1)
	}
	return 1 + r.IntN(h.sc.MaxCrashOp), crashMode(r.IntN(3)), 0
}

// startProc makes a process: its store and a context that ends when it crashes.
func (h *harness) startProc(ctx context.Context, name string, r *rand.Rand, crashesSoFar int) (*procStore, context.Context, func()) {
	killAt, mode, after := h.crashPlan(r, crashesSoFar)
	ps := h.newProcStore(name, r, killAt, mode, h.sc.LateProb)
	pctx, cancel := context.WithCancel(ctx)
	var timer *time.Timer
	if after > 0 {
		timer = time.AfterFunc(after, func() { ps.kill(fmt.Sprintf("at %v", after)) })
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-ps.killed:
			cancel()
		case <-pctx.Done():
		}
	}()
	if killAt > 0 || after > 0 {
		h.event("%s starts; crash plan: op %d %s, time %v", name, killAt, mode, after)
	} else {
		h.event("%s starts", name)
	}
	return ps, pctx, func() {
		if timer != nil {
			timer.Stop()
		}
		cancel()
		<-watchDone
	}
}

func (h *harness) producerConfig(store objectstore.Store, id string) producer.Config {
	cfg := producer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.ManifestPath = h.sc.ManifestPath
	cfg.DataPathPrefix = h.sc.DataPrefix
	cfg.FlushInterval = h.sc.FlushInterval
	cfg.UploadConcurrency = h.sc.UploadConcurrency
	cfg.MaxGroupBatches = h.sc.MaxGroupBatches
	cfg.MaxBufferedInputs = max(h.sc.Pipeline, 1)
	cfg.CommitDeadline = h.sc.Grace / 2
	cfg.Backoff = manifest.Backoff{Initial: 5 * time.Millisecond, Max: 500 * time.Millisecond, Multiplier: 2}
	cfg.ProducerID = id
	cfg.StreamConfig.QueueMode = h.sc.Queue
	cfg.DeliveryTimeout = h.sc.DeliveryTimeout
	return cfg
}

type pendingAppend struct {
	bodies []string
	t      *producer.Ticket
	// before are the appends of its instance accepted before it and unresolved when it was
	// accepted: if one of them then fails with ErrDeliveryTimeout, so must it.
	before []*pendingAppend
}

// runSlot runs one producer slot: instances until Appends appends were made.
func (h *harness) runSlot(ctx context.Context, slot int) {
	r := rand.New(rand.NewPCG(h.sc.Seed, uint64(slot)+1))
	n, crashes := 0, 0
	for inst := 0; n < h.sc.Appends && ctx.Err() == nil; inst++ {
		if h.sc.FixedIDs && inst > 0 {
			sleep(ctx, h.sc.Grace/2) // the commit deadline: the dead process's writes have landed
		}
		name := fmt.Sprintf("p%d.%d", slot, inst)
		ps, pctx, stop := h.startProc(ctx, name, r, crashes)
		h.mu.Lock()
		h.instances++
		h.mu.Unlock()
		var pending []*pendingAppend
		id := name
		if h.sc.FixedIDs {
			id = fmt.Sprintf("p%d", slot)
		}
		p, err := producer.New(pctx, h.producerConfig(ps, id))
		if err == nil {
			for n < h.sc.Appends && !ps.isDead() {
				in := batchfmt.AppendInput{}
				var bodies []string
				k := 1 + r.IntN(h.sc.MaxRecords)
				for j := range k {
					body := fmt.Sprintf("%s.a%d.r%d", name, n, j)
					rec := batchfmt.Record{Body: []byte(body)}
					if r.Float64() < h.sc.Timestamps {
						rec.HasTimestamp = true
						rec.Timestamp = uint64(max(0, time.Now().UnixMilli()-2000+r.Int64N(3000)))
					}
					in.Records = append(in.Records, rec)
					bodies = append(bodies, body)
				}
				h.mu.Lock()
				for _, b := range bodies {
					h.appended[b] = true
				}
				h.mu.Unlock()
				var t *producer.Ticket
				if h.sc.DeliveryTimeout > 0 {
					since := time.Now()
					if h.sc.SinceMax > 0 {
						since = since.Add(-time.Duration(r.Int64N(int64(h.sc.SinceMax))))
					}
					t, err = p.Append(pctx, in, producer.ReceivedAt(since))
				} else {
					t, err = p.Append(pctx, in)
				}
				if errors.Is(err, producer.ErrDeliveryTimeout) && !ps.isDead() {
					h.event("%s: append %d refused: %v", name, n, err)
					h.expire(bodies)
					n++
					continue
				}
				if err != nil {
					if !ps.isDead() && ctx.Err() == nil {
						h.violate("%s: append %d refused without a crash: %v", name, n, err)
					}
					break
				}
				n++
				pa := &pendingAppend{bodies: bodies, t: t}
				for _, q := range pending {
					select {
					case <-q.t.Done():
					default:
						pa.before = append(pa.before, q)
					}
				}
				pending = append(pending, pa)
				// Keep at most Pipeline appends unacknowledged.
				for unresolved(pending) >= h.sc.Pipeline && !ps.isDead() {
					select {
					case <-firstUnresolved(pending).Done():
					case <-ps.killed:
					case <-ctx.Done():
					}
				}
				if r.IntN(4) == 0 {
					sleep(pctx, time.Duration(r.IntN(50))*time.Millisecond)
				}
			}
			if !ps.isDead() {
				if err := p.Close(pctx); err != nil && !ps.isDead() && ctx.Err() == nil {
					h.violate("%s: Close without a crash failed: %v", name, err)
				}
			}
			if ps.isDead() {
				dead, cancel := context.WithCancel(context.Background())
				cancel()
				p.Close(dead) // reap the goroutines of the crashed process
			}
		} else if errors.Is(err, producer.ErrDeliveryTimeout) {
			h.event("%s: open failed with the delivery timeout: %v", name, err) // allowed
		} else if !ps.isDead() && ctx.Err() == nil {
			h.violate("%s: producer.New failed without a crash: %v", name, err)
		}
		stop()
		if ps.isDead() {
			crashes++
			h.mu.Lock()
			h.crashes++
			h.mu.Unlock()
		}
		for _, pa := range pending {
			select {
			case <-pa.t.Done():
			default:
				h.violate("%s: a ticket is unresolved after Close", name)
				continue
			}
			ack, err := pa.t.Result()
			if err == nil {
				for _, q := range pa.before {
					if _, qerr := q.t.Result(); errors.Is(qerr, producer.ErrDeliveryTimeout) {
						h.violate("%s: append %q committed, but %q, accepted before it, failed after it was accepted: %v", name, pa.bodies[0], q.bodies[0], qerr)
					}
				}
				h.mu.Lock()
				h.acked = append(h.acked, ackedAppend{pa.bodies, ack})
				h.mu.Unlock()
			} else if errors.Is(err, producer.ErrDeliveryTimeout) && h.sc.DeliveryTimeout > 0 {
				h.event("%s: append %q failed: %v", name, pa.bodies[0], err)
				h.expire(pa.bodies)
			} else if h.sc.Queue && errors.Is(err, producer.ErrPositionsUnavailable) {
				// Committed, but the collector dropped its entry (the group had consumed it)
				// before the producer could read its positions back: allowed in queue mode.
				h.event("%s: append %q committed, positions unavailable", name, pa.bodies[0])
			} else if !ps.isDead() {
				h.violate("%s: append %q failed without a crash: %v", name, pa.bodies[0], err)
			}
		}
	}
}

// expire records the bodies of an append that failed with ErrDeliveryTimeout: they must
// not be in the stream.
func (h *harness) expire(bodies []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range bodies {
		h.expired[b] = true
	}
}

func unresolved(p []*pendingAppend) int {
	n := 0
	for _, a := range p {
		select {
		case <-a.t.Done():
		default:
			n++
		}
	}
	return n
}

func firstUnresolved(p []*pendingAppend) *producer.Ticket {
	for _, a := range p {
		select {
		case <-a.t.Done():
		default:
			return a.t
		}
	}
	return p[len(p)-1].t
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

// runConsumer runs group members one after another until one has read to the final tail.
func (h *harness) runConsumer(ctx context.Context) {
	r := rand.New(rand.NewPCG(h.sc.Seed, 0xc0))
	crashes := 0
	// The group joins once a producer has created the stream (the harness looks without
	// faults; streams are never deleted here).
	for {
		if _, _, err := objectstore.ReadAll(ctx, h.base, h.sc.ManifestPath); err == nil {
			break
		}
		select {
		case <-h.targetSet:
			if _, _, err := objectstore.ReadAll(ctx, h.base, h.sc.ManifestPath); err != nil {
				h.violate("consumer: the stream was never created: %v", err)
				return
			}
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Zombies: members that are replaced while still alive (a paused process, a partition):
	// they go on reading and acknowledging until they learn they were fenced.
	var zombies sync.WaitGroup
	zctx, stopZombies := context.WithCancel(ctx)
	defer func() {
		stopZombies()
		zombies.Wait()
	}()
	for inst := 0; ctx.Err() == nil; inst++ {
		if inst > 200 {
			h.violate("consumer: 200 members started and none reached the tail")
			return
		}
		name := fmt.Sprintf("c.%d", inst)
		if crashes < h.sc.MaxCrashes && r.Float64() < h.sc.Crashes/3 {
			crashes++
			name += "-zombie"
			ps, pctx, stop := h.startProc(zctx, name, r, h.sc.MaxCrashes)
			zr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
			joined := make(chan struct{})
			zombies.Add(1)
			go func() {
				defer zombies.Done()
				defer stop()
				h.runMember(zctx, pctx, name, ps, zr, true, joined)
			}()
			<-joined
			h.mu.Lock()
			h.zombies++
			h.mu.Unlock()
			sleep(ctx, time.Duration(r.IntN(300))*time.Millisecond)
			continue
		}
		ps, pctx, stop := h.startProc(ctx, name, r, crashes)
		done := h.runMember(ctx, pctx, name, ps, r, false, nil)
		stop()
		if ps.isDead() {
			crashes++
			h.mu.Lock()
			h.crashes++
			h.mu.Unlock()
		}
		if done {
			return
		}
	}
}

func (h *harness) consumerConfig(store objectstore.Store, r *rand.Rand) consumer.Config {
	cfg := consumer.DefaultConfig()
	cfg.ObjectStore = store
	cfg.ManifestPath = h.sc.ManifestPath
	cfg.DataPathPrefix = h.sc.DataPrefix
	cfg.Group = "g"
	cfg.ReadAheadDepth = 1 + r.IntN(4)
	cfg.PollInterval = time.Duration(10+r.IntN(100)) * time.Millisecond
	cfg.MaxBatchRecords = 1 + r.IntN(20)
	cfg.AckInterval = time.Duration(5+r.IntN(500)) * time.Millisecond
	cfg.AckRecords = 1 + r.IntN(30)
	cfg.Backoff = manifest.Backoff{Initial: 5 * time.Millisecond, Max: 300 * time.Millisecond, Multiplier: 2}
	cfg.FetchAttempts = 10
	return cfg
}

// runMember runs one member; it reports whether the group has read everything.
// A zombie member is expected to be fenced; joined (if not nil) is closed once Open returned.
func (h *harness) runMember(ctx, pctx context.Context, name string, ps *procStore, r *rand.Rand, zombie bool, joined chan struct{}) bool {
	c, err := consumer.Open(pctx, h.consumerConfig(ps, r), consumer.GroupOptions{})
	if joined != nil {
		close(joined)
	}
	if err != nil {
		if isCorruption(err) {
			h.violate("%s: open: %v", name, err)
			return true
		}
		if !ps.isDead() && ctx.Err() == nil {
			h.event("%s: open failed: %v", name, err)
			sleep(ctx, 50*time.Millisecond)
		}
		return false
	}
	_, start := c.Checkpoint()
	m := &member{start: start, ackedThru: start}
	h.mu.Lock()
	h.members = append(h.members, m)
	h.mu.Unlock()
	h.event("%s joined at checkpoint %d (epoch %d)", name, start, c.Epoch())
	finished := false
	// Next blocks at the tail; once the producers are done, a member at the tail must stop
	// waiting, so its context ends when the target is known.
	nctx, ncancel := context.WithCancel(pctx)
	defer ncancel()
	targetKnown := func() (uint64, bool) {
		select {
		case <-h.targetSet:
			return h.target, true
		default:
			return 0, false
		}
	}
	watchDone := make(chan struct{})
	defer func() {
		ncancel()
		<-watchDone
	}()
	go func() {
		defer close(watchDone)
		select {
		case <-h.targetSet:
			ncancel()
		case <-nctx.Done():
		}
	}()
	next := start
read:
	for {
		if t, ok := targetKnown(); ok && next >= t {
			finished = true
			break read
		}
		ctxNext := nctx
		if _, ok := targetKnown(); ok {
			ctxNext = pctx // the target is known: read on until it is reached
		}
		b, err := c.Next(ctxNext)
		if err != nil {
			switch {
			case isCorruption(err):
				h.violate("%s: read: %v", name, err)
				finished = true
			case errors.Is(err, consumer.ErrFenced) && zombie:
				h.event("%s: fenced: %v", name, err)
			case errors.Is(err, consumer.ErrFenced):
				h.violate("%s: fenced although no other member is alive: %v", name, err)
			case ps.isDead() || ctx.Err() != nil:
			case nctx.Err() != nil:
				// The target became known while waiting: restart cleanly.
			default:
				h.event("%s: read failed: %v", name, err)
			}
			break read
		}
		for _, rec := range b.Records {
			if rec.SeqNum != next {
				h.violate("%s: delivered seq_num %d, expected %d", name, rec.SeqNum, next)
			}
			next = rec.SeqNum + 1
			m.recs = append(m.recs, consumer.Record{SeqNum: rec.SeqNum, Timestamp: rec.Timestamp, Body: append([]byte(nil), rec.Body...)})
		}
		if len(b.Records) > 0 && r.IntN(5) != 0 {
			last := b.Records[len(b.Records)-1].SeqNum
			if err := c.AckThrough(last); err != nil {
				if !ps.isDead() {
					h.event("%s: ack %d: %v", name, last, err)
				}
			} else {
				m.ackedThru = last + 1
			}
		}
	}
	if ps.isDead() {
		dead, cancel := context.WithCancel(context.Background())
		cancel()
		c.Close(dead)
		return false
	}
	if err := c.Close(pctx); err != nil && !ps.isDead() {
		if errors.Is(err, consumer.ErrFenced) && !zombie {
			h.violate("%s: close: fenced although no other member is alive: %v", name, err)
		} else {
			h.event("%s: close: %v", name, err)
		}
	}
	return finished
}

// runGC runs collector passes until stop, some of them cut short (a collector crash).
func (h *harness) runGC(ctx context.Context, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(h.sc.Seed, 0x9c))
	// One collector remembers cursors and failed deletes across passes, as the daemon's does;
	// a pass cut short is a collector crash, and a fresh collector takes over.
	col, err := gc.NewCollector(h.shared, h.gcConfig())
	if err != nil {
		h.violate("gc: %v", err)
		return
	}
	for {
		t := time.NewTimer(h.sc.GCInterval/2 + time.Duration(r.Int64N(int64(h.sc.GCInterval))))
		select {
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pctx, cancel := ctx, context.CancelFunc(func() {})
		cut := r.IntN(5) == 0
		if cut {
			pctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(300))*time.Millisecond)
		}
		rep, err := col.Pass(pctx, h.sc.ManifestPath, h.sc.DataPrefix)
		cancel()
		if cut && err != nil {
			// A pass cut short leaves the collector to be rebuilt; its error is still
			// checked below.
			nc, cerr := gc.NewCollector(h.shared, h.gcConfig())
			if cerr != nil {
				h.violate("gc: %v", cerr)
				return
			}
			col = nc
		}
		h.mu.Lock()
		h.gcPasses++
		h.mu.Unlock()
		if err != nil && isCorruption(err) {
			h.violate("gc pass: %v", err)
		}
		if rep.Deleted > 0 || err != nil {
			h.event("gc pass: deleted %d, young %d, err %v", rep.Deleted, rep.Young, err)
		}
	}
}

func (h *harness) gcConfig() gc.Config {
	cfg := gc.DefaultConfig()
	cfg.GracePeriod = h.sc.Grace
	cfg.KeepRecent = 0
	cfg.Backoff = manifest.Backoff{Initial: 5 * time.Millisecond, Max: 300 * time.Millisecond, Multiplier: 2}
	return cfg
}
