// Package s3 is the S3 store: an objectstore.Store on a bucket of AWS S3 or an S3-compatible
// server, using aws-sdk-go-v2. Keys are object keys in the bucket; wrap the store with
// objectstore.WithPrefix to confine it to a prefix. Only programs that import this package
// (directly or through objectstore/storeurl) link the AWS SDK.
//
// Versions are ETags as the server returns them (quoted). For S3 and most compatible servers
// an ETag is the MD5 of the content, so rewriting identical bytes can keep the version; the
// manifest's write counter exists for that reason.
//
// Conditional puts send If-None-Match: * (create-only) or If-Match: <etag>. The answers that mean
// "the condition does not hold" map to objectstore.ErrPreconditionFailed with the server's error
// kept as the cause: 412 Precondition Failed; 409 ConditionalRequestConflict (a concurrent
// conditional write won); and 404 NoSuchKey to an If-Match put, which S3-compatible servers send
// when the object is absent. (If a HEAD then finds the object at the version the put named, the
// server contradicts itself, and the put fails with objectstore.ErrInconsistent instead: as a
// conflict it would be retried against that version without a word in the logs.)
//
// Retries and outcome-unknown. Put is never retried by the SDK: its retryer could resend a
// conditional put whose first attempt succeeded but whose answer was lost, and the second attempt
// would then fail with a spurious 412 against the writer's own new version. Instead, when a put
// fails after the request may have reached the server (a timeout, a connection reset or closed
// while waiting for the answer, a 5xx answer, a context ended mid-request), Put returns
// objectstore.ErrOutcomeUnknown and the caller resolves it (the manifest layer re-reads and looks
// for its own write). A put that failed before anything was sent (dial errors, a body that is
// shorter or longer than its size) is a plain error. Get, Head, List and Delete are idempotent and
// use the SDK's standard retryer.
//
// Streaming. Put sends the body as it reads it, with Content-Length set and an unsigned
// payload (X-Amz-Content-Sha256: UNSIGNED-PAYLOAD), so a 64 MiB object is neither buffered
// nor read twice for the SigV4 payload hash; the SDK's automatic request checksums are off
// (RequestChecksumCalculation WhenRequired), which S3-compatible servers such as versitygw
// need. Use TLS endpoints for integrity in transit. Get returns the response body as is.
//
// Before its first put a Store checks that the bucket exists, and before its first
// conditional put that the server honours If-None-Match and If-Match (see Config); a server
// that stays silent for Config.ReadTimeout fails the request instead of holding it.
package s3
