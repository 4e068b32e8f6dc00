package objectstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/objectstore/internal/sized"
)

// MemStore is an in-memory Store for tests and single-process use. Every write gets a new
// version from a store-wide counter, so a version is never reused, even across delete and
// re-create. It is safe for concurrent use.
type MemStore struct {
	mu      sync.RWMutex
	objects map[string]memObject
	keys    []string // sorted; rebuilt lazily when dirty
	dirty   bool
	counter uint64
	closed  bool
	now     func() time.Time
}

type memObject struct {
	data    []byte
	version string
	modTime time.Time
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{objects: make(map[string]memObject), now: time.Now}
}

func (m *MemStore) check(op, key string) error {
	if m.closed {
		return NewOpError(op, key, ErrClosed, nil)
	}
	if err := ValidateKey(key); err != nil {
		return NewOpError(op, key, ErrInvalidKey, err)
	}
	return nil
}

// Get implements Store.
func (m *MemStore) Get(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, NewOpError("get", key, nil, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check("get", key); err != nil {
		return nil, err
	}
	o, ok := m.objects[key]
	if !ok {
		return nil, NewOpError("get", key, ErrNotFound, nil)
	}
	if opts.IfNoneMatch != "" && opts.IfNoneMatch == o.version {
		return nil, NewOpError("get", key, ErrNotModified, nil)
	}
	off, n := opts.Range.Span(int64(len(o.data)))
	data := o.data[off : off+n]
	return &Object{
		ObjectInfo: ObjectInfo{Key: key, Size: int64(len(o.data)), Version: o.version, ModTime: o.modTime},
		Body:       io.NopCloser(bytes.NewReader(data)),
	}, nil
}

// Head implements Store.
func (m *MemStore) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, NewOpError("head", key, nil, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.check("head", key); err != nil {
		return ObjectInfo{}, err
	}
	o, ok := m.objects[key]
	if !ok {
		return ObjectInfo{}, NewOpError("head", key, ErrNotFound, nil)
	}
	return ObjectInfo{Key: key, Size: int64(len(o.data)), Version: o.version, ModTime: o.modTime}, nil
}

// Put implements Store.
func (m *MemStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	if err := cond.Validate(); err != nil {
		return ObjectInfo{}, NewOpError("put", key, nil, err)
	}
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, NewOpError("put", key, ErrInvalidKey, err)
	}
	if size < 0 {
		return ObjectInfo{}, NewOpError("put", key, nil, sized.ErrNegative)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(body, data); err != nil {
		return ObjectInfo{}, NewOpError("put", key, nil, err)
	}
	if n, _ := body.Read(make([]byte, 1)); n > 0 {
		return ObjectInfo{}, NewOpError("put", key, nil, sized.ErrLonger)
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, NewOpError("put", key, nil, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ObjectInfo{}, NewOpError("put", key, ErrClosed, nil)
	}
	cur, exists := m.objects[key]
	if cond.IfAbsent && exists {
		return ObjectInfo{}, NewOpError("put", key, ErrPreconditionFailed, errExists)
	}
	if cond.IfMatch != "" && (!exists || cur.version != cond.IfMatch) {
		return ObjectInfo{}, NewOpError("put", key, ErrPreconditionFailed, errVersionMismatch)
	}
	m.counter++
	o := memObject{data: data, version: "m" + strconv.FormatUint(m.counter, 10), modTime: m.now()}
	m.objects[key] = o
	if !exists {
		m.dirty = true
	}
	return ObjectInfo{Key: key, Size: size, Version: o.version, ModTime: o.modTime}, nil
}

// Delete implements Store.
func (m *MemStore) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return NewOpError("delete", key, nil, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("delete", key); err != nil {
		return err
	}
	if _, ok := m.objects[key]; ok {
		delete(m.objects, key)
		m.dirty = true
	}
	return nil
}

// List implements Store.
func (m *MemStore) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, NewOpError("list", prefix, nil, err)
	}
	limit = PageLimit(limit)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ListPage{}, NewOpError("list", prefix, ErrClosed, nil)
	}
	if m.dirty {
		m.keys = m.keys[:0]
		for k := range m.objects {
			m.keys = append(m.keys, k)
		}
		sort.Strings(m.keys)
		m.dirty = false
	}
	from := max(prefix, startAfter)
	i := sort.SearchStrings(m.keys, from)
	var page ListPage
	for ; i < len(m.keys); i++ {
		k := m.keys[i]
		if k == startAfter {
			continue
		}
		if !strings.HasPrefix(k, prefix) {
			break
		}
		if len(page.Objects) == limit {
			page.NextStartAfter = page.Objects[len(page.Objects)-1].Key
			break
		}
		o := m.objects[k]
		page.Objects = append(page.Objects, ObjectInfo{Key: k, Size: int64(len(o.data)), Version: o.version, ModTime: o.modTime})
	}
	return page, nil
}

// Close implements Store.
func (m *MemStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// Causes of MemStore's failed conditional puts.
var (
	errExists          = errors.New("object exists")
	errVersionMismatch = errors.New("version does not match")
)
