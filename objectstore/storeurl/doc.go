// Package storeurl names stores by URL: Parse reads a store URL without touching any backend,
// and Open opens the store it names. It imports every backend (and so the AWS SDK); a
// program that needs only one backend can import that backend's package instead.
//
//	mem://[prefix]                   a new, empty in-memory store (each Open makes its own)
//	file:///abs/dir                  a file store rooted at /abs/dir
//	/abs/dir, ./rel/dir, rel/dir     the same, as a plain path
//	s3://bucket[/prefix][?query]     an S3 bucket; query parameters:
//	    endpoint=http://host:port    S3-compatible server (default: AWS)
//	    region=us-east-1             region (default: the AWS chain, e.g. AWS_REGION)
//	    path_style=true|false        path-style addressing (default false)
//	    read_timeout=2m              fail a request once the server has been silent this long
//	                                 (s3.Config.ReadTimeout; default s3.DefaultReadTimeout; 0s: never)
//
// Every key of the opened store lives under the URL's prefix (the path after the bucket for
// s3, the host and path for mem). Credentials never go in the URL; S3 uses the standard AWS
// chain (environment, shared config, instance roles).
//
// Every error about the URL itself matches ErrInvalidURL and is a *URLError listing every
// problem found.
package storeurl
