package objectstore

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// OpEvent describes one finished Store operation.
type OpEvent struct {
	Op  Op
	Key string // the key, or the prefix for List
	// Purpose is what the request was made for: PurposeOf the context it was made with.
	Purpose Purpose
	// Bytes moved: the body bytes a Put read from its caller, the body bytes a Get's caller
	// read; zero for other operations.
	Bytes int64
	// Objects is the number of objects a List returned.
	Objects int
	// Duration runs from the call to its result; for a Get that succeeded, to Body.Close,
	// so that it covers the transfer.
	Duration time.Duration
	// Err is nil on success; for a Get, the first read error other than io.EOF, if any.
	Err error
}

// Observer receives an event per operation. Implementations must be safe for concurrent use
// and quick; cmd/sluice adapts one to Prometheus (this package imports no metrics library).
type Observer interface {
	ObserveOp(OpEvent)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(OpEvent)

// ObserveOp calls f.
func (f ObserverFunc) ObserveOp(e OpEvent) { f(e) }

// Instrument returns a Store that reports every operation on s to o. Closing it closes s.
// A Get whose body is never closed is never reported.
func Instrument(s Store, o Observer) Store {
	return &instrumented{inner: s, obs: o}
}

type instrumented struct {
	inner Store
	obs   Observer
}

func (in *instrumented) report(ctx context.Context, op Op, key string, start time.Time, bytes int64, objects int, err error) {
	in.obs.ObserveOp(OpEvent{Op: op, Key: key, Purpose: PurposeOf(ctx), Bytes: bytes, Objects: objects, Duration: time.Since(start), Err: err})
}

func (in *instrumented) Get(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	start := time.Now()
	obj, err := in.inner.Get(ctx, key, opts)
	if err != nil {
		in.report(ctx, OpGet, key, start, 0, 0, err)
		return nil, err
	}
	obj.Body = &countingBody{ReadCloser: obj.Body, done: func(n int64, err error) { in.report(ctx, OpGet, key, start, n, 0, err) }}
	return obj, nil
}

type countingBody struct {
	io.ReadCloser
	n    int64
	err  error
	once sync.Once
	done func(int64, error)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *countingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.done(b.n, b.err) })
	return err
}

func (in *instrumented) Head(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	info, err := in.inner.Head(ctx, key)
	in.report(ctx, OpHead, key, start, 0, 0, err)
	return info, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (in *instrumented) Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	start := time.Now()
	cr := &countingReader{r: body}
	info, err := in.inner.Put(ctx, key, cr, size, cond)
	in.report(ctx, OpPut, key, start, cr.n, 0, err)
	return info, err
}

func (in *instrumented) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := in.inner.Delete(ctx, key)
	in.report(ctx, OpDelete, key, start, 0, 0, err)
	return err
}

func (in *instrumented) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	start := time.Now()
	page, err := in.inner.List(ctx, prefix, startAfter, limit)
	in.report(ctx, OpList, prefix, start, 0, len(page.Objects), err)
	return page, err
}

func (in *instrumented) Close() error { return in.inner.Close() }

// Unwrap returns the instrumented store.
func (in *instrumented) Unwrap() Store { return in.inner }
