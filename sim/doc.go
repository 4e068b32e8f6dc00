// Package sim is sluice's deterministic-as-possible simulation harness: it runs producers,
// a consumer group member and the garbage collector against one in-memory store with
// seeded fault injection and seeded process crashes, then checks the invariants the design
// promises.
//
// # What one run does
//
// A Scenario (NewScenario draws one from a seed) describes a run. Every process sees the
// store through this stack:
//
//	procStore         one per process: its crash, its slow (late) writes
//	   |
//	FaultStore        faultstore.Store, seeded: errors before / after, latency, body errors
//	   |
//	ledger            records every delete that took effect, checks every manifest write
//	   |
//	MemStore          objectstore.MemStore
//
// Run:
//
//   - runs Producers producer slots. Each slot is a sequence of process instances, each a
//     producer.Producer with a fresh producer id (as a restarted process would have); an
//     instance appends with up to Pipeline unacknowledged appends whose records' bodies
//     name the instance and the append ("p1.2.a7.r0"), so a duplicate is visible. An
//     instance may be crashed: at its n-th store operation (before the request, after it
//     took effect, or with the write in flight so that it lands after the process is gone:
//     an upload done but not committed, a commit write in flight, ...), or at a random
//     moment. A crash makes every later request of the process fail without reaching the
//     store, then abandons the producer (Close with an already-cancelled context only reaps
//     its goroutines; it can no longer touch the store). After MaxCrashes crashes a slot's
//     last instance closes cleanly. In a third of the scenarios a restarted instance reuses
//     its slot's producer id (after waiting the commit deadline, as producer.Config requires)
//     and continues its batch numbers.
//   - slows some writes of live processes: the process is told ErrOutcomeUnknown at once and
//     the write lands up to LateMax later, after the process's next requests (reordering).
//   - runs one consumer group member at a time (package consumer), crashed and restarted the
//     same way, acknowledging most batches, until a member has read to the final tail. Some
//     members are replaced while still alive ("zombies": a paused process, a partition): they
//     go on reading and acknowledging until they learn they were fenced.
//   - in queue-mode scenarios, lets the collector drop the entries the group consumed while
//     everything runs.
//   - runs collector passes (package gc, grace period Scenario.Grace; producers use half of
//     it as their commit deadline), some cut short.
//
// Under testing/synctest (see the tests) every sleep, backoff, latency and grace period is
// virtual, so a run of minutes of simulated time takes milliseconds. Store faults are drawn
// per (operation, key, call number) from the seed (see faultstore.Store); crashes and
// workloads from per-process generators seeded from the seed. Goroutine interleaving is not
// under the harness's control, so a seed replays the same plan, not always the same
// interleaving.
//
// # What is checked after each run
//
// With faults switched off, after the collector ran twice past the grace period:
//
//   - every acknowledged record is present exactly once, at the seq_num its ack names, with
//     the timestamps its ack names;
//   - seq_nums are contiguous from 0, timestamps are non-decreasing, and every record in
//     the stream was appended by someone (duplicates of unacknowledged records are
//     violations too);
//   - no object the final manifest references (batch objects and segments, recursively)
//     was ever deleted, and every referenced object is readable;
//   - every manifest write that took effect decodes and stays within its bound
//     (manifest.MaxRecentEntries entries, manifest.SegmentFanout references per level);
//   - the collector left no unreferenced batch or segment object behind;
//   - each consumer member saw, in order, every record from the checkpoint it joined at, as
//     the stream holds it; checkpoints never went back nor past an acknowledgement; the last
//     member reached the final tail;
//   - in queue mode, every acknowledged record the collector dropped had reached the group
//     first, the drop point never passed the group's checkpoint, and members that saw the
//     same seq_num saw the same record;
//   - no process failed without having crashed (a producer Close that could not drain, an
//     append refused, a member other than a zombie fenced).
//
// A broken invariant is a Violation in the Result, with the end of the run's event trace.
package sim
