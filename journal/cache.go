package journal

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/sluice-dev/sluice/objectstore"
)

// Cache is a store that keeps the journal objects written through it in memory, so that
// readers in the committer's process (followers folding new windows, reads of carried
// records) get them without a store request, and the start (header and index) of those
// read from the store, so that a journal is walked from the store once per process however
// many streams fold or seal it. Journal objects are create-only and never change, so a
// cached copy is always right. The oldest objects leave first once the cache holds more
// than its bound. Every other key and every conditional read passes through untouched.
type Cache struct {
	objectstore.Store

	mu    sync.Mutex
	max   int64
	bytes int64
	objs  map[string]*cached
	order []string // keys, oldest first
	hits  int64
}

type cached struct {
	data []byte
	info objectstore.ObjectInfo
}

// NewCache wraps store with a cache of at most maxBytes of journal objects.
func NewCache(store objectstore.Store, maxBytes int64) *Cache {
	return &Cache{Store: store, max: maxBytes, objs: map[string]*cached{}}
}

// Hits is how many reads the cache answered.
func (c *Cache) Hits() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// Put writes through to the store, keeping a journal object that was written.
func (c *Cache) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if _, _, ok := ParseKey(key); !ok || size > c.max {
		return c.Store.Put(ctx, key, body, size, cond)
	}
	data, err := io.ReadAll(io.LimitReader(body, size+1))
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := c.Store.Put(ctx, key, bytes.NewReader(data), int64(len(data)), cond)
	if err == nil {
		c.add(key, data, info)
	}
	return info, err
}

// Get answers reads of a cached journal object from memory; the rest go to the store. A
// read of the start of a journal object (a header and index: ReadIndex) that misses is kept
// too, so that every reader in the process that walks a journal (folds, seals) reads each
// window's index from the store once.
func (c *Cache) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if opts.IfNoneMatch != "" {
		return c.Store.Get(ctx, key, opts)
	}
	c.mu.Lock()
	o := c.objs[key]
	var off, n int64
	hit := false
	if o != nil {
		off, n = opts.Range.Span(o.info.Size)
		hit = off+n <= int64(len(o.data))
		if hit {
			c.hits++
		}
	}
	c.mu.Unlock()
	if hit {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return &objectstore.Object{ObjectInfo: o.info, Body: io.NopCloser(bytes.NewReader(o.data[off : off+n]))}, nil
	}
	obj, err := c.Store.Get(ctx, key, opts)
	if err != nil || opts.Range == nil || opts.Range.Offset != 0 || opts.Range.Length <= 0 || opts.Range.Length > maxHead {
		return obj, err
	}
	if _, _, ok := ParseKey(key); !ok {
		return obj, nil
	}
	data, err := io.ReadAll(io.LimitReader(obj.Body, opts.Range.Length))
	obj.Body.Close()
	if err != nil {
		return nil, err
	}
	c.keep(key, data, obj.ObjectInfo)
	obj.Body = io.NopCloser(bytes.NewReader(data))
	return obj, nil
}

// maxHead bounds the start of an object a read keeps: ReadIndex reads 64 KiB first.
const maxHead = 1 << 20

// Delete deletes from the store and forgets the object.
func (c *Cache) Delete(ctx context.Context, key string) error {
	c.mu.Lock()
	if o := c.objs[key]; o != nil {
		c.bytes -= int64(len(o.data))
		delete(c.objs, key)
	}
	c.mu.Unlock()
	return c.Store.Delete(ctx, key)
}

// add keeps a whole object written through the cache.
func (c *Cache) add(key string, data []byte, info objectstore.ObjectInfo) {
	info.Size = int64(len(data))
	c.keep(key, data, info)
}

// keep keeps data, the start of the object at key (all of it when len(data) == info.Size),
// unless as much is kept already.
func (c *Cache) keep(key string, data []byte, info objectstore.ObjectInfo) {
	if info.Key == "" {
		info.Key = key
	}
	c.mu.Lock()
	if old := c.objs[key]; old != nil && len(old.data) >= len(data) {
		c.mu.Unlock()
		return
	}
	defer c.mu.Unlock()
	if old := c.objs[key]; old != nil {
		c.bytes -= int64(len(old.data))
	} else {
		c.order = append(c.order, key)
	}
	c.objs[key] = &cached{data: data, info: info}
	c.bytes += int64(len(data))
	for c.bytes > c.max && len(c.order) > 0 {
		k := c.order[0]
		c.order = c.order[1:]
		if o := c.objs[k]; o != nil {
			c.bytes -= int64(len(o.data))
			delete(c.objs, k)
		}
	}
}
