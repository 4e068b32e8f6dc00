package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluice-dev/sluice/stream"
)

// Scenario is one simulated run. NewScenario derives every field from a seed; a test may
// change fields before Run.
type Scenario struct {
	Seed   uint64
	Stream stream.Stream

	// Producers is the number of producer "slots" writing at once; each slot is a sequence
	// of process instances (a crashed one is replaced by a fresh one with a new producer id)
	// that together make Appends appends of 1..MaxRecords records.
	Producers  int
	Appends    int
	MaxRecords int
	// Pipeline is how many appends a producer keeps unacknowledged at once.
	Pipeline int
	// FlushInterval, UploadConcurrency and MaxGroupBatches configure every producer (a
	// FlushInterval of 0 is producer.FlushEveryAppend).
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

	// Committers runs that many committer processes (crashed and restarted like the
	// others), each with a role lease of CommitterLease; producers send their commits to
	// committer 0 or to the one the manifest names. The simulated network loses requests
	// (LostRequests) and replies (LostReplies), and delays a request past the lease
	// (Pauses), so that roles change hands while requests are in flight.
	Committers                        int
	CommitterLease                    time.Duration
	LostRequests, LostReplies, Pauses float64
	// Journal runs the committers in journal mode (committer.Config.Journal): commit windows
	// written as journal objects, manifests checkpointed every CommitterLease/2 (no write
	// only renews a role), a crashed committer's journal, or one whose holder does not
	// answer a probe through the simulated network, sealed by whoever writes the stream
	// next.
	Journal bool

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
		Seed: seed, Stream: stream.MustNew("s/manifest", "s/data"),
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
	// Drawn last, so that the fields above are drawn as before.
	sc.Committers = []int{0, 0, 1, 2}[r.IntN(4)]
	sc.CommitterLease = time.Duration(100+r.IntN(3000)) * time.Millisecond
	sc.LostRequests = []float64{0, 0.05, 0.2}[r.IntN(3)]
	sc.LostReplies = []float64{0, 0.05, 0.2}[r.IntN(3)]
	sc.Pauses = []float64{0, 0.05}[r.IntN(2)]
	sc.Journal = sc.Committers > 0 && r.IntN(2) == 0
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
