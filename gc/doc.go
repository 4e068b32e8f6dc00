// Package gc applies retention to streams and deletes the objects they no longer reference.
//
// A stream is a stream.Stream. Batch objects live under its DataPrefix() + "/" and segment
// objects under its SegmentPrefix(), named as package stream makes them (BatchKey,
// SegmentKey). The collector deletes only keys its parsers accept (ParseBatchKey,
// ParseSegmentKey): the manifest, the clock probe and any foreign object under the prefixes
// are never touched.
//
// # One pass (Collector.Pass)
//
//  1. Retention. A conditional manifest update drops, oldest first, the segment references
//     and entries that lie wholly below the drop point (manifest.State.DropPoint): the trim
//     point set by trim commands, raised by the retention age (entries whose arrival is older
//     than retention_policy.age by Config.Now; nothing for infinite retention) and, in queue
//     mode with at least one consumer group, by the lowest group checkpoint. Entries that
//     arrived less than KeepRecent ago stay (see Config.KeepRecent). Unlike
//     manifest.State.Prune the last entry goes too, so a drained queue references nothing.
//     A sealed segment leaves only whole, once its newest entry is past the age; until then
//     a second conditional update raises the trim point past the run of expired entries at
//     its start (manifest.Index.ExpiredPrefix, which reads the segments first, once), so that
//     their records are no longer read, and Report.TrimRaisedTo says where to. Their objects
//     are then no longer referenced (step 3) and go once old, while the segment stays.
//  2. The store's clock. The pass writes a probe object (stream.Stream.ProbeKey) and takes its
//     modification time as "now" by the store's own clock; the local clock is never compared
//     with object times. An object is old when its modification time is more than
//     GracePeriod before the probe's. A Collector reuses a probe for ProbeReuse across the
//     streams of one round (an older probe only makes objects look younger).
//  3. References. The pass reads the manifest again (after the probe) and collects every key
//     it references: segment references and, recursively, the segments inside them (read once
//     and cached: segments are immutable), and the batch objects of the entries, in the
//     manifest or in its segments, that hold a readable record. An entry wholly below the
//     readable start (manifest.State.ReadableStart: the trim point, or the first entry) holds
//     none: no reader fetches its object (a session that meets it missing re-reads the
//     manifest and moves on), so its object goes once old even while the entry stays, in a
//     segment not wholly expired or for KeepRecent. If any of it cannot be read, the pass
//     fails before deleting anything.
//  4. Deletion. Failed deletes of earlier passes are retried first (re-checked). Then the pass
//     lists the data prefix and the segment prefix from where the previous pass stopped, at
//     most MaxListPerPass objects, and deletes the unreferenced old ones, at most
//     MaxDeletesPerPass. A listing that reaches the end starts over next pass. (FullPass,
//     for runs not repeated soon, lists both prefixes from their start, in rounds of
//     MaxListPerPass, until both have reached their end.) Failed deletes are logged, counted
//     (sluice_gc_delete_errors_total) and retried next pass.
//  5. delete_on_empty (see below).
//
// # Why an object a producer may still commit is never deleted
//
// The producer uploads a batch object and commits it within its commit deadline, measured
// from the start of the upload; past it, it uploads the batch again under a new key and never
// commits the old one. The deadline is at most half the grace period. An object deleted by a
// pass is older than the grace period by the store's clock at the probe, so its upload began
// more than a grace period before the probe: its producer either committed it long before the
// probe (then the manifest read after the probe references it, unless retention dropped it)
// or has given up on it. The half grace period left over absorbs the difference between the
// producer's clock rate and the store's and the time between reading the deadline and the
// manifest write. Manifest entries only ever leave the manifest, and the readable start
// never falls within a generation, so an unreferenced object never becomes referenced again. Segment objects written for a manifest write that then lost
// its race are unreferenced from the start and are collected the same way; a segment written
// by a manifest write that stays in flight for longer than the grace period could be collected
// too early, which the grace period (minutes) makes practically impossible.
//
// # delete_on_empty
//
// With delete_on_empty.min_age_secs > 0, a stream with no readable record (manifest.State.
// IsEmpty) is deleted once it has been empty for min_age_secs by Config.Now. "Empty since" is
// the later of the first pass of this collector that saw it empty with the same tail (so a
// restarted collector waits min_age_secs again: late, never early) and the last commit
// recorded in the producer table. The stream is deleted only once no batch or segment object
// is left under its prefixes (earlier passes delete them as they pass the grace period), so
// nothing is orphaned. Deletion replaces the manifest, conditionally on the version the pass
// read, with an empty object, a tombstone, which stays: a producer that commits at the same
// moment either wins (the replacement fails, the stream lives on) or fails its write and then
// its reload (manifest.Handle.Load reports a tombstone as no manifest), so no acknowledged
// record is ever lost with the stream; readers, listings and the collector treat a tombstone
// as a deleted stream, and manifest.Handle.Create replaces it conditionally. The key is never
// deleted: the store has no conditional delete, and a collector deleting it could race with a
// client creating the stream again and delete the new, live manifest. An object a losing
// producer uploaded in that instant is left behind under the prefix.
//
// # Running it
//
// Run(ctx, store, cfg, list) runs a round every Config.Interval (and on Trigger): list
// returns the streams (the daemon lists them with package catalog), and each gets one pass,
// with the collector remembering per-stream listing cursors, failed deletes and emptiness
// between rounds. Close stops it and waits. Pass(ctx, store, manifestPath, dataPrefix, cfg)
// is a single pass with a fresh collector, for tools and tests.
package gc
