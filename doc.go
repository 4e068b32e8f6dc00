// Package sluice is an ingest buffer on object storage.
//
// Producers embedded in ingestion services turn appends into batch objects on S3 (or a local
// directory, or memory) and commit them, in order, to a manifest with conditional writes.
// Consumers read the manifest, fetch the batches in order, and see every record at a stable
// position (seq_num, timestamp) in a stream. Nothing but the object store is shared.
//
// The packages, from the store up:
//
//   - objectstore: the storage seam; its backends objectstore/file and objectstore/s3,
//     objectstore/storeurl to open one from a URL, objectstore/faultstore and
//     objectstore/storetest for tests, objectstore/storemetrics for its Prometheus metrics.
//   - stream: where a stream lives (its manifest key, data and segment prefixes, name, basin)
//     and every key of its objects, made and parsed in one place.
//   - batchfmt: records and batch objects.
//   - manifest: a stream's state, its encoding, and the commit step.
//   - producer: the write path. consumer: the read path and consumer groups.
//   - watch: one manifest watcher per stream, shared by a process's followers, and told of
//     the commits the process makes.
//   - committer: one committer per stream, commits for many writers; committer/wire, its
//     protocol; committer/commitclient, the one client producers and consumers use.
//   - journal: the committer's journal objects (docs/journal.md; not yet used).
//   - gc: retention and garbage collection.
//   - catalog and engine: many streams and basins in one store, as the daemon serves them.
//   - s2api and server: S2's HTTP API and its wire formats; access: S2's access tokens.
//   - daemon: the daemon assembled, to run in process; cmd/sluice: the command.
//   - sim and crashtest: the seeded simulation and the SIGKILL crash tests.
package sluice
