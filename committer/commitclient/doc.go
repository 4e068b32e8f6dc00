// Package commitclient is how a writer of a stream (a producer committing batches, a
// consumer group member writing its checkpoint) reaches the stream's committer, and decides
// when not to: one Client, used by packages producer and consumer alike.
//
// # Contract
//
//   - Route: a Client sends to the committer the stream's manifest names while its role is
//     live (by Config.Now), else to Config.URL; with neither, URL is "" and the caller
//     commits directly. After a committer failed a request, URL is "" for
//     Config.DirectFor, then the committer is asked again.
//   - Observe tells the Client the role the caller last read in the manifest; every answer
//     renews it, so writers keep sending to a committer without reading the manifest.
//   - Commit sends a wire.Request over the route and returns the answer. A committer that
//     answers role_held names the holder: the request is sent there once. Every failure
//     is an *Error whose Unknown says whether the request may have been committed: false
//     when it surely did not arrive (ErrUnreachable) or the committer refused it, true
//     after a lost answer, a storage failure (wire.CodeStorage) or an answer that does not
//     fit the request. The producer then looks its batches up in the manifest.
//   - A request to Config.Local's URL goes to that committer in process (no HTTP, no JSON);
//     every other through Config.Transport (default HTTP, with Config.Token).
//
// A Client is safe for concurrent use; it starts no goroutine and holds no connection of
// its own (the transport's).
package commitclient
