// Package consumer is sluice's read path: ordered reads of a stream from any position, live
// following of the tail, and consumer groups with epochs and checkpoints.
//
// A stream is a manifest (package manifest) plus immutable batch objects (package batchfmt)
// in an object store (package objectstore). A reader loads the manifest, walks its entries
// (across sealed segments) in seq_num order, fetches the batch objects, skips the appends
// the commit rejected, numbers the remaining records from each entry's FirstSeq and
// replays their timestamps with the entry's Clock, so a read sees exactly the positions the
// commits assigned. Nothing is written by a Reader.
//
// # Reading
//
// A ReadRequest starts at exactly one of:
//
//   - AtSeqNum(n): at seq_num n. n past the tail fails with *RangeError carrying the tail
//     (S2's 416) unless Clamp, which starts at the tail; n == tail is valid (nothing yet).
//   - AtTimestamp(ts): at the first record whose timestamp is >= ts; at the tail if none.
//   - AtTailOffset(k): k records before the tail; at 0 if the stream holds fewer.
//
// A start below the first readable record (the trim point, or entries dropped by
// retention) starts at the first readable record, as S2 clamps reads to the trim point.
//
// A read stops at Count records, before a record that would take it past Bytes metered
// bytes, at the first record whose timestamp is >= Until (exclusive), or, without Follow, at
// the tail it saw when it opened (so it ends even while producers append); then Next returns
// ErrDone. With Follow it waits at the tail for new records.
// SkipCommands leaves command records out (they take their seq_nums and count toward no
// limit).
//
// Reader.Read is the unary form (what an HTTP GET returns: the records available now, at
// most MaxBatchRecords / MaxBatchBytes); Reader.Open returns a Session for iterating
// (Next blocks while following; Read takes per-call bounds and can return at once).
//
// # Following the tail
//
// A follower at the tail re-reads the manifest every PollInterval with a conditional GET
// (If-None-Match on the version it holds), so an unchanged manifest costs a 304 and no body.
// A Notifier shared with an in-process producer (or the server that drives it) wakes
// followers as soon as a commit is acknowledged, without waiting for the next poll.
// With Config.Watch (a watch.Hub shared by the process), followers do not poll on their
// own: the followers of a stream share one watcher, which polls once per interval for all of
// them (backing off to the hub's MaxInterval while the stream is idle) and which a
// committer in the process publishes to; see package watch for the staleness bound. If the
// stream is deleted the follower gets ErrStreamNotFound; if it is replaced by a new
// generation, manifest.ErrGenerationChanged.
//
// # Read-ahead
//
// A session fetches up to ReadAheadDepth batch objects at once, and at most ReadAheadBytes
// of objects beyond the one being delivered; they are decoded in the fetching goroutines and
// delivered strictly in seq_num order. Close cancels the fetches and waits for them.
//
// # Errors
//
// A batch object the manifest references but the store lacks is an *ObjectError matching
// ErrMissingObject; one that fails to decode or disagrees with its entry (size, appends,
// record count) matches ErrCorrupt. Both name the object key and its seq_num range. They
// end the read: nothing is skipped silently. One exception is not an error: an object whose
// entry has left the manifest (retention, trim), or now lies wholly below the readable start
// (a trim, or retention inside a sealed segment, rose past it, and the collector deleted the
// object while the entry stays), while the session was reading it; the session re-reads the
// manifest to tell the two apart and moves on to the first readable record. Corrupt manifests and segments are manifest.ErrCorrupt. Other store failures are
// retried FetchAttempts times with backoff.
//
// # Consumer groups
//
// Open(ctx, cfg, opts) joins cfg.Group (cfg is a GroupConfig: a reader's Config and the group's
// settings): it bumps the group's epoch in the manifest (a conditional write), which fences the
// previous member, and reads from the group's checkpoint on. Ack(seq) and AckThrough(seq)
// acknowledge delivered records; the checkpoint (the first seq_num not acknowledged) is written
// with a conditional manifest write AckInterval after the first pending acknowledgement, when
// AckRecords records are pending, and on Flush and Close; while the stream has a committer (the
// manifest's live role, or GroupConfig.Committer), the member sends it the checkpoint instead,
// to be written with its commits, through the same commitclient.Client producers use, and
// writes it itself when none answers. A fenced member learns it from its reads or its next
// checkpoint write and gets *FencedError from then on (from Ack, Next, Flush, Close); its
// unwritten acknowledgements are lost and the records go to the newer member again
// (at-least-once). Several named groups on one stream each keep their own epoch and checkpoint.
// In queue mode (manifest.Config.QueueMode) the collector drops entries once every group's
// checkpoint is past them. A group that Open creates starts at the head, or at the tail with
// GroupConfig.NewGroupStart. ListGroups, ResetGroup and DeleteGroup (which take a reader's
// Config and the group's name) show and steer a stream's groups (the last two fence the live
// member); GroupLag computes a group's lag, shared by members, the CLI and the daemon.
//
// # Goroutines, logs, metrics
//
// A Session owns its fetch goroutines (Close waits for them). A Consumer owns one
// checkpoint writer (Close stops it and waits). Logs go to Config.Logger; metrics
// (sluice_consumer_*: records and metered bytes delivered, object fetches, fetch bytes,
// fetch errors by kind, fetch latency, manifest polls by result, checkpoint writes and
// failures, fenced members; and for members, sluice_consumer_group_lag_records and
// ..._lag_seconds) go to Config.Registerer.
package consumer
