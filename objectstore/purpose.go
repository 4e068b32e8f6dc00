package objectstore

import "context"

// Purpose says why a store request is made, so that an Observer (see Instrument) can count
// requests by what they pay for. It travels in the request's context: WithPurpose sets it,
// and the layers below (a manifest read, a segment read) inherit it.
type Purpose string

// The purposes sluice's packages label their requests with. A request whose context carries
// none has the empty Purpose; PurposeOf reports it as PurposeOther.
const (
	// PurposeCommit: a producer's or committer's uploads and manifest writes, and the reads
	// that serve them.
	PurposeCommit Purpose = "commit"
	// PurposePoll: a follower's or watcher's reads of a manifest to learn whether it changed.
	PurposePoll Purpose = "poll"
	// PurposeFetch: a reader's reads of batch objects and segments.
	PurposeFetch Purpose = "fetch"
	// PurposeGC: the collector's listings, reads and deletions.
	PurposeGC Purpose = "gc"
	// PurposeOther: a request with no purpose set.
	PurposeOther Purpose = "other"
)

type purposeKey struct{}

// WithPurpose returns ctx labelled with p; requests made with it are reported with p.
func WithPurpose(ctx context.Context, p Purpose) context.Context {
	return context.WithValue(ctx, purposeKey{}, p)
}

// PurposeOf returns the purpose ctx was labelled with, or PurposeOther.
func PurposeOf(ctx context.Context) Purpose {
	if p, ok := ctx.Value(purposeKey{}).(Purpose); ok && p != "" {
		return p
	}
	return PurposeOther
}
