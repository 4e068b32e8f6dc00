// Package manifest owns a stream's state, its encoding, and the commit step.
//
// A stream is a manifest object at a path (default "ingest/manifest") plus immutable batch
// objects under a data prefix. The manifest is one small object rewritten only with
// conditional writes: If-None-Match: * to create it (Handle.Create), If-Match on the version
// read to change it (Handle.Write, Handle.Update). It holds (see State):
//
//   - a stream generation id, random at creation, so a deleted and recreated stream is never
//     mistaken for the old one (readers and writers compare it on every reload);
//   - a write counter that every write increments, and the nonces of the latest 32 writes, so
//     no two writes ever have the same bytes (S3 ETags are the MD5 of the body: a manifest
//     that returned to an earlier content would let a stale If-Match succeed), and a writer
//     whose write had an unknown outcome can tell whether it took effect (State.Applied);
//   - the tail position (next seq_num, last timestamp), fencing token and trim point;
//   - the stream config (timestamping mode and uncapped, retention, delete_on_empty, queue
//     mode);
//   - consumer groups: name -> {epoch, checkpoint}; the checkpoint is the seq_num a group
//     resumes from (all records below it acknowledged);
//   - the producer table for deduplication: producer id -> {last committed batch number,
//     last seen}, bounded to MaxProducers (1024, least recently seen evicted first) and, once
//     half full, expiring rows silent for ProducerExpiry (24 h, longer than any commit
//     deadline; judged against the median row so one fast clock cannot expire the rest);
//   - the recent entries, one per committed batch object, and references to sealed segments;
//   - the committer role, and a journal pointer when a committer's journal may hold commits
//     the manifest does not show yet.
//
// # Journals
//
// A committer (docs/journal.md) commits many streams' windows into one journal object, and
// only later folds them into each manifest. State.Journal then points at the windows that may
// hold a stream's newer commits; an entry may be ranged (Entry.Ranged): a byte range of a
// window rather than a whole batch object. A window's section for a stream starts with a
// Delta (EncodeDelta, DecodeDelta): the stream's journal fields the window changed (entries,
// tail, fencing token, trim point, producer rows), never groups, config or retention, which
// their writers keep changing in the manifest directly. FoldJournal applies the windows
// (ApplyDelta) up to the first gap or fence; LoadView reads a stream as every committed
// record shows it. Apply refuses (ErrJournalOpen) on a state naming a journal it does not own
// (OwnJournal): a writer that would append seals the journal first (Handle.SealJournal).
//
// # Entries, seq_nums and timestamps
//
// An Entry names one batch object, the seq_num of its first committed record and its count,
// byte counts, min/max timestamps, the timestamp floor at commit (the tail timestamp before
// it), the arrival time and timestamping mode used, the producer id and batch number, and the
// appends of the object that were rejected by their conditions (with the reason and the
// expected seq_num or actual token, so the error can be rebuilt). A reader decodes the object,
// skips rejected appends (Entry.IsRejected), numbers the other records from FirstSeq, and
// replays their timestamps with Entry.Clock: raw = the client timestamp (client-prefer,
// client-require; capped at the arrival time unless uncapped) or the arrival time (arrival
// mode, or no client timestamp); timestamp = max(raw, running max starting at the floor). So
// seq_nums are contiguous from 0 and timestamps non-decreasing in seq_num order. Records below
// TrimPoint are not readable. Entries are contiguous: each starts where the previous one ends.
//
// # The commit step
//
// State.Apply commits one Batch: appends in order, each checked against the state as it
// stands at that point — fencing token, then match_seq_num, then client-require timestamps —
// then numbered; fence records set the token after their append's check, trim records move
// the trim point to min(argument, own seq_num + 1), as S2 does, and never backwards. Apply is
// pure (no I/O).
// A producer commits many batches in one write (group commit): Apply each, then Write. A batch
// whose producer row shows it committed is a duplicate and changes nothing; Results rebuilds
// its outcome from its entry (found with Index.FindBatch).
//
// # Size bound
//
// Write seals before writing: while more than MaxRecentEntries (512) entries are in the
// manifest, the oldest SealEntries (256) move into a level-0 segment object; while more than
// SegmentFanout (32) references of one level are in the manifest, the oldest 32 move into a
// segment of the next level. Segment objects are written create-only under
// stream.SegmentPrefix(path) (path + ".seg/"), named by stream.SegmentKey (the first 4 bytes of
// the generation, the first seq_num, the level and a random number; package gc recognises
// them by stream.ParseSegmentKey), and never change. So a manifest holds at most 512
// entries and 32 references per level (levels grow logarithmically), whatever the backlog.
// Index walks segments and entries for lookups by seq_num, timestamp or batch.
//
// Entries leave the manifest (DropBefore, Prune) below the trim point, past the retention age
// (by arrival time) or, in queue mode, once every group's checkpoint passed them. Their
// objects then become unreferenced and the collector deletes them.
//
// # Encoding
//
// Manifest and segment objects share one frame; integers in the body are unsigned varints,
// strings and byte strings are a varint length then the bytes, booleans one byte 0 or 1,
// maps are written sorted by key:
//
//	+-------+---------+--------------------------------+-------------------+
//	| magic | version | body                           | CRC32C(Castagnoli)|
//	| 4 B   | 1 B     | varint-encoded fields          | 4 B big-endian    |
//	+-------+---------+--------------------------------+-------------------+
//	magic: "SLMF" manifest, "SLSG" segment; the CRC covers magic, version and body.
//	version (manifest): 1 without a committer role; 2 with one (FormatVersionCommitter),
//	whose body ends with the role; 3 with a journal pointer or a ranged entry
//	(FormatVersionJournal): the role (possibly empty), then the pointer, and every entry
//	ends with its offset and length. version (segment): 1, or 2 (SegmentVersionRanged) for a
//	level-0 segment holding a ranged entry, whose entries end with offset and length. A
//	manifest or segment without those is written in the older version, byte for byte as
//	before; a build that reads only older versions refuses a newer one rather than misread it.
//
//	manifest body:
//	  generation[16] write_counter n_nonces nonce[8]*n created_ms
//	  tail_seq tail_ts fencing_token trim_point
//	  ts_mode(1) uncapped(1) retention_infinite(1) retention_age_secs delete_on_empty_secs queue(1)
//	  n_groups   { name epoch checkpoint }*
//	  n_producers{ id last_batch last_seen_ms }*
//	  n_refs     { key level(1) first_seq end_seq min_ts max_ts entries metered object max_arrival }*
//	  n_entries  { key first_seq records metered object min_ts max_ts floor arrival
//	               ts_mode(1) uncapped(1) producer_id batch_num n_appends
//	               n_rejected { append reason(1) expected actual }*
//	               (manifest version 3, segment version 2) offset length }*
//	  (version 2 and 3) committer_id committer_url committer_until_ms
//	  (version 3) has_journal(1) [journal_id from]
//	segment body:
//	  level(1) generation[16] (level 0: n_entries {entry}* | level > 0: n_refs {ref}*)
//
//	journal delta (EncodeDelta; the start of a stream's section in a journal window):
//	  version(1)=1 n_entries { in_window(1) [key unless in_window] entry fields after the key,
//	                           with offset length (relative to the delta's end if in_window) }*
//	  tail_seq tail_ts fencing_token trim_point n_producers { id last_batch last_seen_ms }*
//
// Decoding checks every length against the bytes left, the checksum, that nothing trails, and
// the invariants (contiguous entries, ordered timestamps, ref levels; a version 3 manifest or
// version 2 segment has what its version is for; a ranged entry's length is its ObjectBytes
// and its range does not overflow). Any failure is a *CorruptError (errors.Is ErrCorrupt); a
// newer version byte is ErrUnsupportedVersion.
//
// # Reading and writing
//
// Open(store, path, opts...) returns the Handle on one stream's manifest; it does no I/O, and
// its options set the backoff of its retries (WithBackoff) and Update's attempts
// (WithMaxAttempts). Load reads (LoadWithRetry retries plain failures; LoadOrCreate creates
// the stream when there is none); Create makes a new stream; Write is one conditional write
// (ErrConflict when another writer came first, ErrOutcomeUnknown when it may or may not have
// happened); Update is read-modify-write with jittered exponential backoff that applies its
// function's change exactly once, resolving unknown outcomes by the write nonce. Consumers
// use Update for epoch bumps (OpenGroup) and acks (SetCheckpoint, Prune).
package manifest
