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
// records) get them without a store request. Journal objects are create-only and never
// change, so a cached copy is always right; a window written by another process is read
// from the store as usual. The oldest objects leave first once the cache holds more than
// its bound. Every other key and every conditional read passes through untouched.
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

// Get answers reads of a cached journal object from memory; the rest go to the store.
func (c *Cache) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if opts.IfNoneMatch == "" {
		c.mu.Lock()
		o := c.objs[key]
		if o != nil {
			c.hits++
		}
		c.mu.Unlock()
		if o != nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			off, n := opts.Range.Span(int64(len(o.data)))
			return &objectstore.Object{ObjectInfo: o.info, Body: io.NopCloser(bytes.NewReader(o.data[off : off+n]))}, nil
		}
	}
	return c.Store.Get(ctx, key, opts)
}

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

func (c *Cache) add(key string, data []byte, info objectstore.ObjectInfo) {
	if info.Key == "" {
		info.Key = key
	}
	info.Size = int64(len(data))
	c.mu.Lock()
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
