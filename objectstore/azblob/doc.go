// Package azblob is the Azure Blob Storage store: an objectstore.Store on one container, using
// the Azure SDK for Go (sdk/storage/azblob). Keys are blob names; wrap the store with
// objectstore.WithPrefix to confine it to a prefix. Only programs that import this package
// (directly or through objectstore/storeurl) link the Azure SDK.
//
// Versions are ETags, always in their quoted form ("0x8DC..."): blob properties and write
// answers carry them quoted, listings unquoted, and the store quotes the latter so that one
// object has one version whichever operation saw it. An If-Match put takes either form. Every
// write makes a new ETag, even of identical bytes.
//
// Puts are single Put Blob requests (block blobs), conditional with If-None-Match: *
// (create-only) or If-Match: <etag> (compare-and-swap); no block is staged, so a lost race
// leaves no uncommitted blocks behind. 409 BlobAlreadyExists and 412 ConditionNotMet, and a
// 404 to an If-Match put, map to objectstore.ErrPreconditionFailed. Put is never retried by
// the SDK (a retried write whose first attempt landed would answer 412, and read as a lost
// race); a put that fails after it may have reached the service (no answer, a 5xx other than
// ServerBusy) returns objectstore.ErrOutcomeUnknown for the caller to resolve, as on S3.
// Reads, listings and deletes use the SDK's retries. A single Put Blob takes up to 5000 MiB
// on current API versions.
//
// Throttling: 503 ServerBusy and 429 map to objectstore.ErrThrottled (nothing applied).
// Azure sustains far more writes to one blob than GCS or S3; Store states
// Config.KeyWritesPerSecond (default DefaultKeyWritesPerSecond) as its
// objectstore.WriteLimiter.
//
// Listing sends the prefix and, as startFrom, the key to start after (API versions from
// 2026 honour it; a service that ignores it is still correct, the store skips what it
// already returned). A listing that goes on from a page the store returned resumes from the
// service's continuation marker, which the store remembers for the last pages it returned.
//
// Credentials: a connection string (Config.ConnectionString, which names the endpoint too:
// Azurite's is the usual way to reach the emulator), an account key, or else a token from
// Azure's default credential chain (azidentity.DefaultAzureCredential: environment, workload
// identity, managed identity, the Azure CLI).
package azblob
