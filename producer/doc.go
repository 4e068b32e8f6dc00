// Package producer is sluice's write path: a Producer, embedded in an ingestion service,
// turns appends into batch objects in an object store and commits them, in order, to the
// stream's manifest with conditional writes (package manifest holds the state and the
// commit step).
//
// # Contract
//
//   - Append(ctx, in, opts...) validates at once (S2's limits: 1..1000 records, at most
//     1 MiB metered; header and command rules; under client-require, a timestamp on every
//     record), waits for buffer space within ctx, and returns a Ticket. The ticket resolves
//     after the manifest write that commits the append, with an Ack (Start, End exclusive,
//     and the stream's Tail), or with a typed error (see Ticket). AppendSync waits for it.
//   - Options: WithChain(c) makes the append part of an ordered run such as an S2 append
//     session's (each commits only if none before it failed); ReceivedAt(t) counts
//     Config.DeliveryTimeout from when the caller received the append.
//   - Submit(ctx, record) batches single records with S2's client-side batching (linger,
//     records, bytes); its RecordTicket gives the record's seq_num and its batch's Ack.
//   - Flush(ctx) sends what is buffered and waits for every append accepted before it.
//   - Close(ctx) refuses new appends, drains, and stops the producer's goroutines; if ctx
//     ends first it aborts what is left (ErrAborted, or ErrOutcomeUnknown).
//
// No acknowledged append is lost or committed twice, and one producer's appends enter the
// stream in the order Append accepted them (appends of different producers interleave).
//
// # How a batch travels
//
// A batch's life is an explicit state (batch.go): open (taking appends) → sealed (flushed
// FlushInterval after its first append, at FlushSizeBytes, on Flush or Close, or when Append
// waits for space) → uploading (stored create-only under a fresh time-sortable key by one of
// UploadConcurrency uploaders, retried with backoff, each attempt under a new key) →
// uploaded → writing (the commit loop applies the oldest uploaded batches, up to
// MaxGroupBatches, to the manifest with manifest.State.Apply and writes it with If-Match) →
// resolved. A write that fails without effect returns its batches to uploaded; one with an
// unknown outcome leaves them maybe-written, and the commit loop re-reads the manifest and
// looks its producer id and batch numbers up in the producer table before anything else, so
// that nothing is committed twice. A batch whose upload began more than CommitDeadline ago
// is uploaded again before a write, so the manifest never names an object the collector may
// have deleted.
//
// "Committer" names only the stream's committer (package committer: a daemon that commits
// many writers' batches in one write). When the manifest names a live one, or
// Config.Committer gives one, the commit loop sends it the write instead of writing the
// manifest itself; a commitclient.Client decides where to send it and when to write
// directly instead (none answering, or one that failed within DirectFor). A request whose
// outcome is unknown leaves its batches maybe-written, as a direct write would.
//
// DeliveryTimeout, when set, fails a batch that no write may have committed once its
// deadline passes, with every batch after it. A store that ignores conditional writes
// (objectstore.ErrConditionsUnsupported) fails the producer at once (Err). A manifest that
// disappears, changes generation, or reads back corrupt three times fails every pending
// ticket and the producer.
//
// A fixed ProducerID may be reused across restarts (batch numbers continue from the
// manifest), never by two live producers at once.
//
// # Goroutines, logs, metrics
//
// A Producer owns its uploaders, its commit loop, a flush timer, Submit's linger loop and,
// with DeliveryTimeout, an expiry timer; Close stops them and waits. Logs go to
// Config.Logger; metrics (sluice_producer_*, labelled with the producer id) to
// Config.Registerer, unregistered by Close.
package producer
