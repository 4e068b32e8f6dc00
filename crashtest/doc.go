// Package crashtest holds real-crash tests of the sluice command: several "sluice append"
// producer processes and a "sluice consume" group member run against one stream on the file
// store and on a real S3-compatible server, and are killed with SIGKILL at seeded random
// moments and restarted, over many cycles. Afterwards the test checks, from the acks the
// producers printed and from a final "sluice read":
//
//   - every acknowledged record is present exactly once, at the seq_num its ack names;
//   - seq_nums are contiguous from 0 and timestamps non-decreasing;
//   - nothing is in the stream that was not sent, and nothing twice;
//   - the consumer group's output covers every record, each as the stream holds it, and a
//     restarted member never skips ahead (it resumes at or before where the previous one
//     stopped: at-least-once, in order).
//
// With a committer (TestCrashFileCommitter, the committer subtests of the store tests), the
// producers send their commits to a "sluice serve" daemon that is SIGKILLed and restarted at
// its URL among the others. TestCrashCommitterPausedPastLease adds a fourth producer and
// stops the committer with SIGSTOP for longer than its lease (serve --committer-lease 1s),
// then continues it; the producers wait --committer-timeout 1s for its answers, and each
// pause must see the stream's tail move (they commit directly while it is stopped), unless
// on the file store the committer was stopped holding the store's flock of the manifest.
//
// In journal mode (serve --journal, docs/journal.md) the stream lives in a basin, and some
// producers append through the daemon's S2 API ("sluice --endpoint ... append"), so their
// records are carried in its journal windows; such a producer fails when the daemon is
// killed or stopped under it, and only then is restarted. TestCrashJournalDaemonKilled
// SIGKILLs the daemon among the others (whoever writes next fences and seals the journal
// it left); TestCrashJournalCommitterPausedPastLease is the pause test in journal mode,
// where a stopped daemon's next window, once it wakes, fails create-only on the fence the
// direct writers left. Both log the journals, windows and fences left in the store.
//
// Record bodies name their producer slot, process instance and line number
// ("s1.i4.n000123"), so a duplicate or a misplaced record is visible.
//
// The package has no non-test code. The tests build ./cmd/sluice once. The S3, GCS and
// Azure tests read SLUICE_TEST_S3_URL, SLUICE_TEST_GCS_URL and SLUICE_TEST_AZURE_URL
// (skipped when unset, failed when unset and CI=true). The seed comes from SLUICE_SEED or
// the clock and is logged; SLUICE_CRASHTEST_CYCLES sets the number of kill cycles per
// backend (default 60, 15 with -short). The pause tests run at most 15 cycles and go on
// past them until the committer was stopped past its lease 3 times and killed twice (more
// with SLUICE_CRASHTEST_CYCLES); a pause the file store's lock stalled is not counted. The
// journal daemon test runs at most 15 cycles unless SLUICE_CRASHTEST_CYCLES is set.
package crashtest
