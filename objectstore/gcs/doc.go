// Package gcs is the Google Cloud Storage store: an objectstore.Store on one GCS bucket, using
// cloud.google.com/go/storage (its JSON API over HTTP). Keys are object names; wrap the store
// with objectstore.WithPrefix to confine it to a prefix. Only programs that import this
// package (directly or through objectstore/storeurl) link Google's client.
//
// Versions are object generations, in decimal: every write, even of identical bytes, makes a
// new one. A version that is not a positive decimal generation ("garbage", "0", an S3 ETag)
// names no object of this store, so an If-Match put on it fails with
// objectstore.ErrPreconditionFailed without being sent (sent as ifGenerationMatch=0 it would
// mean "create only").
//
// Conditional puts send ifGenerationMatch=0 (create-only, the client's DoesNotExist) or
// ifGenerationMatch=<generation> (compare-and-swap). A 412 answer maps to
// objectstore.ErrPreconditionFailed. Reads return the body and the generation of the very
// object read, together, from one request; Get with IfNoneMatch opens the object and
// answers objectstore.ErrNotModified when the generation opened is the one given.
//
// Retries. The client retries idempotent operations, and counts a conditional write as
// idempotent; Put turns that off (storage.RetryNever): a write whose first attempt landed but
// whose answer was lost would be retried and answered 412, which would read as a lost race
// when the writer's own object won. A put that fails after the request may have reached the
// server (no answer, a 5xx, a context ended mid-request) returns objectstore.ErrOutcomeUnknown
// for the caller to resolve, as on S3. Puts are single requests (Writer.ChunkSize 0): no
// resumable upload session is left behind.
//
// Integrity. A body that can be rewound (an io.Seeker: a *bytes.Reader, a file) is read
// twice: first to check its length and compute its CRC32C, which the upload carries, so
// that GCS stores exactly those bytes or nothing, and a body of the wrong length fails
// before any request. Another body is streamed; if it fails part-way, the request is cut
// before its multipart body ends, which GCS does not store (fake-gcs-server does).
//
// Throttling. GCS sustains about one write per second to one object name and answers more
// with 429 (rateLimitExceeded); that maps to objectstore.ErrThrottled, a refusal that applied
// nothing. Store implements objectstore.WriteLimiter with Config.KeyWritesPerSecond (default
// DefaultKeyWritesPerSecond) so that a manifest writer paces itself below it.
//
// Listing uses the start offset (startOffset, inclusive, so the key equal to startAfter is
// skipped here) and the prefix; GCS lists names in byte order of their UTF-8, as the Store
// contract asks.
//
// Credentials come from Google's usual chain (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// application default credentials, the metadata server) unless Config gives client options;
// with STORAGE_EMULATOR_HOST set, the client talks to that emulator without credentials, as
// Google's client does on its own.
package gcs
