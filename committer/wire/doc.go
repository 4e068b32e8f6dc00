// Package wire is the committer's protocol: the JSON a writer POSTs to a committer at Path
// (Request) and the JSON it gets back (Response), and the one place where these types
// convert to and from the manifest's (convert.go).
//
// # Contract
//
//   - The JSON field names and meanings are the protocol: older writers talk to newer
//     committers and the reverse, so a field is only ever added, as optional.
//   - A Request carries what manifest.State.Apply needs of a producer's batches (keys, batch
//     numbers, conditions, per-record timestamps and commands, metered sizes), never record
//     bytes, and consumer groups' checkpoints.
//   - A Response answers every batch and checkpoint of its request, in order, with what a
//     direct commit would have given; or its Error says nothing of the request was
//     committed, except CodeStorage: then the outcome is unknown.
//
// The server is package committer, the client package commitclient.
package wire
