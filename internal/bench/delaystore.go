package bench

import (
	"context"
	"io"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// DelayStore returns a Store that adds d to each request to s each way: it waits d before
// passing the request on and d again before returning the answer, so a local store behaves
// like one a network round trip away (2·d per request). A Get's body is not slowed further.
// A context that ends during a wait ends the request with its error, as a client that stops
// waiting for a store's answer would (the request may still have taken effect). d <= 0
// returns s unchanged. Closing the returned store closes s.
func DelayStore(s objectstore.Store, d time.Duration) objectstore.Store {
	if d <= 0 {
		return s
	}
	return &delayStore{inner: s, d: d}
}

type delayStore struct {
	inner objectstore.Store
	d     time.Duration
}

// wait sleeps d, or until ctx ends.
func (s *delayStore) wait(ctx context.Context) error {
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *delayStore) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	obj, err := s.inner.Get(ctx, key, opts)
	if werr := s.wait(ctx); werr != nil {
		if obj != nil {
			obj.Body.Close()
		}
		return nil, werr
	}
	return obj, err
}

func (s *delayStore) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if err := s.wait(ctx); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := s.inner.Head(ctx, key)
	if werr := s.wait(ctx); werr != nil {
		return objectstore.ObjectInfo{}, werr
	}
	return info, err
}

func (s *delayStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	if err := s.wait(ctx); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := s.inner.Put(ctx, key, body, size, cond)
	if werr := s.wait(ctx); werr != nil {
		return objectstore.ObjectInfo{}, werr
	}
	return info, err
}

func (s *delayStore) Delete(ctx context.Context, key string) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	err := s.inner.Delete(ctx, key)
	if werr := s.wait(ctx); werr != nil {
		return werr
	}
	return err
}

func (s *delayStore) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	if err := s.wait(ctx); err != nil {
		return objectstore.ListPage{}, err
	}
	page, err := s.inner.List(ctx, prefix, startAfter, limit)
	if werr := s.wait(ctx); werr != nil {
		return objectstore.ListPage{}, werr
	}
	return page, err
}

func (s *delayStore) Close() error { return s.inner.Close() }

// Unwrap returns the delayed store.
func (s *delayStore) Unwrap() objectstore.Store { return s.inner }
