// Package sluice is an ingest buffer on object storage.
//
// Producers embedded in ingestion services turn appends into batch objects on S3 (or a local
// directory, or memory) and commit them, in order, to a manifest with conditional writes.
// Consumers read the manifest, fetch the batches in order, and see every record at a stable
// position (seq_num, timestamp) in a stream. Nothing but the object store is shared.
//
// The packages: objectstore (the storage seam), batchfmt (records and batch objects), manifest
// (stream state and the commit step), producer (the write path), consumer (the read path), gc
// (garbage collection), daemon (the daemon, assembled, to run in process), and the command
// cmd/sluice.
package sluice
