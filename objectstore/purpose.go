package objectstore

import (
	"context"
	"io"
)

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

// WithDefaultPurpose returns a Store that makes each request to s whose context carries no
// purpose with p: for a component that makes all its requests for one purpose (a producer
// commits, a collector collects) and does not label its contexts itself. Closing it closes s.
func WithDefaultPurpose(s Store, p Purpose) Store { return &purposed{inner: s, p: p} }

type purposed struct {
	inner Store
	p     Purpose
}

func (s *purposed) ctx(ctx context.Context) context.Context {
	if _, ok := ctx.Value(purposeKey{}).(Purpose); ok {
		return ctx
	}
	return WithPurpose(ctx, s.p)
}

func (s *purposed) Get(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	return s.inner.Get(s.ctx(ctx), key, opts)
}

func (s *purposed) Head(ctx context.Context, key string) (ObjectInfo, error) {
	return s.inner.Head(s.ctx(ctx), key)
}

func (s *purposed) Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	return s.inner.Put(s.ctx(ctx), key, body, size, cond)
}

func (s *purposed) Delete(ctx context.Context, key string) error {
	return s.inner.Delete(s.ctx(ctx), key)
}

func (s *purposed) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	return s.inner.List(s.ctx(ctx), prefix, startAfter, limit)
}

func (s *purposed) Close() error { return s.inner.Close() }

// Unwrap returns the store requests go to.
func (s *purposed) Unwrap() Store { return s.inner }
