package objectstore

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// WithPrefix returns a Store that keeps every key under prefix in s: key k of the returned
// store is key prefix+"/"+k of s. prefix is a slash-separated path that is itself a valid key
// (a trailing slash is allowed and ignored); an empty prefix returns s unchanged. Listing strips
// the prefix from the keys it returns; errors keep the full key of s, which is what a person
// looking at the bucket sees. Closing the returned store closes s.
func WithPrefix(s Store, prefix string) (Store, error) {
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return s, nil
	}
	if err := ValidateKey(p); err != nil {
		return nil, fmt.Errorf("objectstore: prefix %q: %w", prefix, err)
	}
	return &prefixStore{inner: s, prefix: p + "/"}, nil
}

type prefixStore struct {
	inner  Store
	prefix string // ends with "/"
}

// Unwrap returns the wrapped store.
func (p *prefixStore) Unwrap() Store { return p.inner }

// full maps an outer key to the inner key, validating the outer key first so that, for
// example, "" does not silently name the prefix itself.
func (p *prefixStore) full(op, key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", NewOpError(op, key, ErrInvalidKey, err)
	}
	return p.prefix + key, nil
}

func (p *prefixStore) strip(info ObjectInfo) ObjectInfo {
	info.Key = strings.TrimPrefix(info.Key, p.prefix)
	return info
}

func (p *prefixStore) Get(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	k, err := p.full("get", key)
	if err != nil {
		return nil, err
	}
	obj, err := p.inner.Get(ctx, k, opts)
	if err != nil {
		return nil, err
	}
	obj.ObjectInfo = p.strip(obj.ObjectInfo)
	return obj, nil
}

func (p *prefixStore) Head(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := p.full("head", key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.inner.Head(ctx, k)
	return p.strip(info), err
}

func (p *prefixStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	k, err := p.full("put", key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.inner.Put(ctx, k, body, size, cond)
	return p.strip(info), err
}

func (p *prefixStore) Delete(ctx context.Context, key string) error {
	k, err := p.full("delete", key)
	if err != nil {
		return err
	}
	return p.inner.Delete(ctx, k)
}

func (p *prefixStore) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	after := ""
	if startAfter != "" {
		after = p.prefix + startAfter
	}
	page, err := p.inner.List(ctx, p.prefix+prefix, after, limit)
	if err != nil {
		return ListPage{}, err
	}
	for i := range page.Objects {
		page.Objects[i] = p.strip(page.Objects[i])
	}
	if page.NextStartAfter != "" {
		page.NextStartAfter = strings.TrimPrefix(page.NextStartAfter, p.prefix)
	}
	return page, nil
}

func (p *prefixStore) Close() error { return p.inner.Close() }
