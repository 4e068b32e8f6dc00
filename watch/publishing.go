package watch

import (
	"bytes"
	"context"
	"io"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// PublishingStore returns a Store that writes through to s and publishes to hub every
// manifest written through it, conditionally and successfully, that someone in the process
// follows (a key with a watcher on s): decoded from the bytes written, with the version the
// store gave them, so that the followers are woken with no store read at all. Give it to
// the process's committer and producers: the process that commits a stream then wakes its
// followers of every commit, its own and those it takes for others. Writes of keys nobody
// follows pass through untouched; so do reads. Closing it closes s.
func PublishingStore(s objectstore.Store, hub *Hub) objectstore.Store {
	return &publishing{inner: s, hub: hub}
}

type publishing struct {
	inner objectstore.Store
	hub   *Hub
}

func (p *publishing) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	// A manifest is only ever written conditionally (created, or replaced at a version).
	if (!cond.IfAbsent && cond.IfMatch == "") || size <= 0 || p.hub.lookup(p.inner, key) == nil {
		return p.inner.Put(ctx, key, body, size, cond)
	}
	var buf bytes.Buffer
	buf.Grow(int(size))
	info, err := p.inner.Put(ctx, key, io.TeeReader(body, &buf), size, cond)
	if err != nil || int64(buf.Len()) != size {
		return info, err
	}
	if st, derr := manifest.Decode(key, buf.Bytes()); derr == nil {
		p.hub.Publish(p.inner, key, &manifest.Snapshot{State: st, Version: info.Version})
	}
	return info, nil
}

func (p *publishing) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	return p.inner.Get(ctx, key, opts)
}

func (p *publishing) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	return p.inner.Head(ctx, key)
}

func (p *publishing) Delete(ctx context.Context, key string) error { return p.inner.Delete(ctx, key) }

func (p *publishing) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	return p.inner.List(ctx, prefix, startAfter, limit)
}

func (p *publishing) Close() error { return p.inner.Close() }

// Unwrap returns the store written to.
func (p *publishing) Unwrap() objectstore.Store { return p.inner }
