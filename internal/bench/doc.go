// Package bench measures a stream end to end, for sluice bench: producers write records to a
// fresh stream at a given rate for a given time while a reader follows it, and it reports the
// throughput, the latency from sending a record to its ack, the latency from sending it to
// its delivery to the reader, and the object-store requests made per GiB ingested.
//
// What it writes to and reads from is a Target: a store opened in this process
// (StoreTarget: producer.Producer instances and a consumer.Reader) or a daemon's S2 HTTP
// API (HTTPTarget). Run creates the target's stream, and the caller deletes it (Delete)
// whatever Run returned.
//
// Each record carries its send time in a header named SentHeader (decimal nanoseconds since
// the run began), so the reader needs no table of what was sent. A record's latencies count
// from the moment it was due at the requested rate (from its send with no rate), so a
// target that falls behind shows in them rather than in a silently lower rate.
//
// Latencies are kept in a Histogram of fixed size (buckets about 1% wide), so a run of any
// length takes bounded memory; percentiles are exact to about 1%, maxima exactly.
package bench
