// Package committer is the committer: the server that brokers a stream's commits. Many
// producers on many machines upload their own batch objects and send one committer the
// commit requests, which it applies together in one manifest write (group commit across
// processes). A stream's manifest takes only so many conditional writes a second (about 15
// on S3 Standard), so one writer per producer does not scale; one committer does.
//
// The protocol (wire.Request, wire.Response and their conversions to the manifest's types)
// is package committer/wire; the writers' side (which committer to ask, when to commit
// directly instead) is package committer/commitclient.
//
// # Contract
//
//   - A wire.Request carries what manifest.State.Apply needs of a producer's batches (keys,
//     batch numbers, conditions, per-record timestamps and commands, metered sizes), never
//     record bytes. The committer applies each request's batches in order, all or none,
//     and answers with exactly what a direct commit would give: positions, or a rejection
//     (seq_num mismatch, fencing token, client-require, an earlier append of the chain).
//   - Every write takes or renews the stream's committer role (manifest.CommitterRole, for
//     Lease). The manifest's If-Match stays the only arbiter: a committer that lost the
//     role, or two that believe they hold it, cannot both commit; a conflict is re-read and
//     re-applied, and a batch that an earlier attempt committed is answered as a duplicate
//     (the producer table shows it), never committed twice.
//   - An answer's Error says nothing of the request was committed (role held by another,
//     generation changed, invalid, stopping), except wire.CodeStorage: the outcome is
//     unknown, and the producer looks its batches up in the manifest, as after any unknown
//     outcome.
//   - Close answers what is queued, stops the loops and gives up the roles it holds.
//
// # Journal mode
//
// With Config.Journal the committer commits through a journal (docs/journal.md, package
// journal): one loop takes every request queued while the previous window was written and
// writes them, for all streams, as one create-only window object; it answers once that
// window is durable (one window in flight, so every earlier one is durable too). A stream's
// manifest is written when the committer takes its role (pointing at the journal from its
// next window), at checkpoints (every CheckpointInterval, folding the stream's durable
// windows in) and when the stream retires or the committer closes (pointer cleared, role
// given up). No write only renews a role: the committer's answers vouch for it (Role, a
// Lease from its clock's now), and a committer that finds the role lapsed in the manifest
// probes the holder (wire.Request.Journal) and sends the writer there while it answers,
// sealing its journal only when it does not. Batches may carry their bytes (wire.Batch.Data) from a
// producer in the process; their entries then name byte ranges of the window. A failed or
// fenced window starts a new journal: the requests of that window are answered as not
// committed (fenced) or of unknown outcome, and each stream takes its role again, sealing
// the old journal first. Checkpoints alone never go through a window.
//
// The daemon (sluice serve) serves Handler at Path; writers find the committer in the
// manifest's role or in their commitclient.Config, and commit directly when none answers.
// A program that runs a Committer gives it to its writers as commitclient.Config.Local,
// so that its own requests skip HTTP.
package committer
