// Package producer is sluice's write path: a Producer, embedded in an ingestion service,
// turns appends into batch objects in an object store and commits them, in order, to the
// stream's manifest with conditional writes. See package manifest for the stream state and
// the commit step.
//
// # Contract
//
//   - Append(ctx, input) validates at once (the seeds' limits: 1..1000 records, at most 1 MiB
//     metered; header and command rules; under client-require, a timestamp on every record),
//     blocks while MaxBufferedInputs appends or MaxInFlightBytes metered bytes are
//     unacknowledged (honouring ctx), and returns a Ticket. The ticket resolves only after
//     the manifest write that commits the append has succeeded, with an Ack: Start, End
//     (exclusive) and the stream's Tail, each a (seq_num, timestamp). Or it resolves with a
//     typed error: manifest.SeqNumMismatchError{Expected} or
//     manifest.FencingTokenMismatchError{Actual} when the append's condition failed at
//     commit time (then none of its records are in the stream; other appends of the same
//     batch object still commit), manifest.ErrTimestampRequired, or ErrAborted /
//     ErrOutcomeUnknown when Close gave up. AppendSync waits for the ticket.
//     AppendChained(ctx, in, chain) is Append for an ordered run of appends, such as an S2
//     append session's, with many in flight: each commits only if none before it in its
//     Chain failed (else manifest.ErrPrecedingAppendFailed), so nothing after a session's
//     first failure enters the stream. AppendChainedSince(ctx, in, chain, since) also counts
//     Config.DeliveryTimeout from since, when the caller received the append, as the daemon
//     does for its clients' appends (ErrDeliveryTimeout).
//   - Submit(ctx, record) batches single records with the seeds' BatchingConfig (linger,
//     max records, max bytes); its RecordTicket gives the record's seq_num and its batch's Ack.
//   - Flush(ctx) flushes everything buffered and waits for the outcome of every append
//     accepted before the call (the outcomes are on the tickets).
//   - Close(ctx) drains: it refuses new appends, flushes, waits until every accepted append
//     has resolved, then stops the producer's goroutines and waits for them. If ctx ends
//     first it aborts what is left (see Close). A second Close returns nil once the
//     goroutines have stopped; Append, Submit and Flush after Close return ErrClosed.
//
// # How a batch travels
//
//  1. Appends accumulate in the open batch (batchfmt.Encoder). It is flushed FlushInterval
//     after its first append, when its encoded size reaches FlushSizeBytes, on Flush or Close,
//     or when Append waits for buffer space. An append is never split.
//  2. The batch gets the next batch number of this producer and an arrival time (the
//     producer's clock, used by the timestamping rules), and is uploaded create-only under a
//     fresh unique key DataPathPrefix + "/" + 12 hex digits of Unix ms + 16 random hex
//     digits, by one of UploadConcurrency uploaders. A failed upload is retried with
//     jittered exponential backoff, each attempt under a new key, until it succeeds, the
//     producer is aborted (Close waits for it until Close's context ends), or, with
//     Config.DeliveryTimeout set, the batch is not committed that long after its flush
//     (less the longest time an append of it waited to be accepted, for appends handed
//     over with AppendChainedSince, which must be accepted within half of it): then its
//     appends, and every append accepted after them, fail with ErrDeliveryTimeout and are
//     not in the stream (a batch a manifest write may have committed, one in flight or one
//     with an unknown outcome, is not failed so). Each failure is logged at Warn; one the
//     store refuses (a missing
//     bucket, refused credentials: objectstore.ErrNoBucket, ErrAccessDenied), which only an
//     operator can cure, at Error, with its class, as are the manifest reads and writes
//     that fail so. A store whose server does not honour conditional writes
//     (objectstore.ErrConditionsUnsupported, which the store keeps for its whole life) fails
//     every append at once, and the producer with it (Producer.Err): no upload or manifest
//     write can succeed. Appends a manifest write in flight may commit are left to that write.
//  3. One committer takes the oldest pending batch once it is uploaded, together with the
//     uploaded batches right behind it (up to MaxGroupBatches: group commit), applies them to
//     a copy of the manifest state with manifest.State.Apply (conditions, seq_nums,
//     timestamps, fence, trim) and writes it with If-Match on the version it read.
//  4. On success the tickets resolve. On any failure (a conflict with another producer, an
//     error, an unknown outcome) the committer backs off (jittered, exponential), re-reads
//     the manifest and first looks up its producer id and batch numbers in the manifest's
//     producer table: batches it finds committed are resolved from their entries
//     (manifest.Results), never written again; the rest are applied afresh to the new state.
//     The table rows outlive any commit deadline (manifest.ProducerExpiry), and a write with
//     an unknown outcome can only ever land on the version it named, so no record is
//     committed twice.
//  5. Before each write attempt, a batch whose upload began more than CommitDeadline ago
//     (default 5 min, half the collector's default 10-minute grace period) is uploaded again
//     under a new key, so the manifest never references an object the collector may have
//     deleted.
//
// Batches commit in batch-number order, so one producer's appends enter the stream in the
// order Append accepted them. Appends of different producers interleave. A stream's
// generation is checked on every re-read: if the manifest disappears, is replaced by a new
// generation, or reads back corrupt three times in a row, every pending ticket fails with
// manifest.ErrNotExist, manifest.ErrGenerationChanged or manifest.ErrCorrupt (joined with
// ErrOutcomeUnknown where a write had been attempted) and the producer stops accepting
// appends; Close then returns that error.
//
// A fixed ProducerID may be reused across restarts (the producer continues its batch
// numbers from the manifest), but never by two live producers at once.
//
// # Goroutines, logs, metrics
//
// A Producer owns UploadConcurrency uploaders, one committer, one flush timer loop and one
// Submit linger loop; all stop on Close, which waits for them. Logs go to Config.Logger;
// metrics (sluice_producer_*: appends by result, records, metered bytes, uploads, upload
// errors, re-uploads, commits, batches per commit, commit errors by kind, ack latency,
// manifest write latency), labelled with the producer id, go to Config.Registerer and are
// unregistered by Close.
package producer
